"""RayLauncher on a local Ray (ray.init()): engines started by actors in placement groups,
linked when healthy, drained before they stop."""

import os
import sys
import threading

import pytest

ray = pytest.importorskip("ray", reason="needs ray (pip install '.[ray]')")

from slocore.scaling.launcher import CommandTemplate, EngineSpec, InstanceState  # noqa: E402
from slocore.scaling.ray_launcher import RayLauncher  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from raykit import init_local_ray  # noqa: E402
from test_scaling_launcher import FakeRegistry, post  # noqa: E402


def test_ray_launcher_needs_init():
    if ray.is_initialized():
        pytest.skip("ray already initialised in this process")
    with pytest.raises(RuntimeError, match="ray.init"):
        RayLauncher(EngineSpec(command=command))


@pytest.fixture(scope="module")
def local_ray():
    init_local_ray(num_cpus=2, object_store_memory=100 << 20)
    yield
    ray.shutdown()


# data, not a function of this module: Ray ships it to the actor's node
command = CommandTemplate(
    [
        sys.executable,
        os.path.join(HERE, "scaling_fake_engine.py"),
        "--host",
        "{host}",
        "--port",
        "{port}",
        "--role",
        "{role}",
    ],
    warm_args=["--warm"],
)


def test_ray_launcher_start_drain(local_ray):
    reg = FakeRegistry()
    spec = EngineSpec(command=command, startup_timeout_s=60, drain_timeout_s=20, stop_grace_s=5, poll_s=0.05)
    L = RayLauncher(spec, reg, bundle={"CPU": 0.5})
    try:
        a = L.start("prefill")
        b = L.start("decode")
        assert a.state == b.state == InstanceState.READY
        assert reg.events == [("ready", a.url, "prefill"), ("ready", b.url, "decode")]
        assert post(a.url + "/v1/completions", {})[0] == 200
        res = {}
        t = threading.Thread(target=lambda: res.update(r=post(b.url + "/v1/completions", {"latency": 0.8})))
        t.start()
        while L.inflight(b) != 1:
            pass
        L.drain(b.id)
        t.join()
        assert res["r"][0] == 200
        assert reg.events[-2:] == [("draining", b.url), ("stopped", b.url)]
        assert not L._alive(b)
    finally:
        L.close()
    assert all(i.state == InstanceState.STOPPED for i in L.instances())
