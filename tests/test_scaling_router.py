"""The launcher linked to slocore's own router (slocore serve) through its admin API: a
scaled-out engine (slocore engine, a subprocess) becomes a router backend only once healthy,
takes traffic, and leaves the router before it is stopped."""

import json
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("yaml", reason="the serve extra (pyyaml) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from slocore.childenv import child_env  # noqa: E402
from slocore.ports import free_port
from slocore.scaling.launcher import CommandTemplate, EngineSpec, InstanceState, LocalLauncher, http_get  # noqa: E402
from slocore.scaling.router_link import RouterAdminRegistry  # noqa: E402

ENV = child_env()


@pytest.fixture
def router(tmp_path):
    port = free_port()
    cfg = tmp_path / "router.yaml"
    cfg.write_text("admin_token: tk\npolicy: round_robin\n")
    p = subprocess.Popen(
        [sys.executable, "-m", "slocore.cli", "serve", "--config", str(cfg), "--port", str(port)],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if http_get(url + "/health")[0] == 200:
                break
        except OSError:
            pass
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            pytest.fail(f"router did not start: {p.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)
    yield url
    p.terminate()
    p.wait(10)
    p.stderr.close()


def complete(url):
    req = urllib.request.Request(
        url + "/v1/completions",
        data=json.dumps({"prompt": "q", "max_tokens": 2}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


def test_launcher_adds_and_removes_router_backends(router):
    reg = RouterAdminRegistry(router, "tk")
    spec = EngineSpec(
        command=CommandTemplate(
            [sys.executable, "-m", "slocore.cli", "engine", "--host", "{host}", "--port", "{port}"]
        ),
        env={"PYTHONPATH": ENV["PYTHONPATH"]},
        startup_timeout_s=60,
        drain_timeout_s=30,
        poll_s=0.1,
    )
    with LocalLauncher(spec, reg) as L:
        before = {b["name"] for b in reg.backends()}
        inst = L.start()
        name = reg.name_for(inst.url)
        assert {b["name"] for b in reg.backends()} == before | {name}
        for _ in range(6):
            assert complete(router) == 200
        served = {b["name"]: b["served"] for b in reg.backends()}
        assert served[name] >= 2, served  # round robin over the old and the new backend
        assert L.inflight(inst) == 0
        L.drain(inst.id)
        assert inst.state == InstanceState.STOPPED and inst.proc.poll() is not None
        assert {b["name"] for b in reg.backends()} == before
        assert complete(router) == 200  # the router still serves with what is left
