"""The emulated engine refuses what vLLM refuses (context overflow: vLLM's 400), frees the
work of a client that leaves, and the router's retry budget keeps one stalling request from
visiting every engine."""

import asyncio

import numpy as np
import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
import aiohttp  # noqa: E402

from slocore.serve import engine as eng  # noqa: E402
from slocore.serve.retry import RetryBudget, RetryBudgetConfig  # noqa: E402
from test_serve_router import EMU, run, serving  # noqa: E402


def test_context_overflow_is_vllms_400():
    assert eng.context_error(10, 5, 100) is None
    e = eng.context_error(90, 20, 100)["error"]
    assert e["type"] == "BadRequestError" and e["code"] == 400 and e["param"] == "input_tokens"
    assert e["message"].startswith("This model's maximum context length is 100 tokens. However, you requested 110")
    assert eng.context_error(1, 101, 100)["error"]["param"] == "max_tokens"
    for field in ("max_num_seqs", "max_batch_tokens", "default_max_tokens", "kv_blocks", "max_model_len"):
        for bad in ("abc", 1.5, 0, True):  # refused by name, never cast (1.5 used to become 1)
            with pytest.raises(ValueError, match=rf"^{field}: must be an integer >= 1, got {bad!r}"):
                eng.EmulatedEngine(**{field: bad})
    for bad in ("nope", "die_after:-1", "hang_after:x", "die_after"):  # used to be accepted and ignored
        with pytest.raises(ValueError, match="fault: expected die_after:N or hang_after:N"):
            eng.EmulatedEngine(fault=bad)
    # the KV cache bounds the context too
    e2 = eng.EmulatedEngine(kv_blocks=4)
    assert e2.max_model_len == 4 * e2.block_size
    assert eng.EmulatedEngine(max_model_len=np.int64(32)).max_model_len == 32  # a numpy integer passes

    async def go():
        d = {
            "backends": [
                {"name": "e0", "emulated": dict(EMU, max_model_len=64)},
                {"name": "e1", "emulated": dict(EMU, max_model_len=64)},
            ],
            "retries": 2,
        }
        async with serving(d) as (router, url, s):
            async with s.post(url + "/v1/completions", json={"prompt": list(range(60)), "max_tokens": 10}) as r:
                body = await r.json()
                assert r.status == 400 and body["error"]["type"] == "BadRequestError", body
                assert "maximum context length is 64" in body["error"]["message"]
            assert router.metrics.retries._value.get() == 0  # a 4xx is the client's: never retried
            async with s.post(url + "/v1/completions", json={"prompt": list(range(50)), "max_tokens": 10}) as r:
                assert r.status == 200

    run(go())


def test_engine_frees_the_request_of_a_client_that_leaves():
    async def go():
        e = eng.EmulatedEngine(**dict(EMU, fault="hang_after:0"))  # never produces a token
        runner, url = await eng.start(e)
        try:
            async with aiohttp.ClientSession() as s:
                for stream in (False, True):
                    task = asyncio.ensure_future(
                        s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 5, "stream": stream})
                    )
                    for _ in range(100):
                        await asyncio.sleep(0.02)
                        if e.reqs:
                            break
                    assert e.reqs, "the request never reached the engine"
                    if task.done():  # streaming: the headers came, the client closes the stream
                        task.result().close()
                    task.cancel()  # the client leaves
                    for _ in range(100):
                        await asyncio.sleep(0.02)
                        if not e.reqs:
                            break
                    assert not e.reqs, f"stream={stream}: the engine kept the request of a client that left"
        finally:
            await runner.cleanup()

    run(go())


def test_a_stalled_request_is_not_resent_to_every_engine():
    async def go():
        d = {
            "backends": [{"name": f"e{i}", "emulated": dict(EMU, fault="hang_after:0")} for i in range(3)],
            "policy": {"name": "round_robin"},
            "retries": 2,
            "timeouts": {"first_token_s": 0.4, "idle_s": 0.4},
        }
        async with serving(d) as (router, url, s):
            async with s.post(url + "/v1/completions", json={"prompt": "z", "max_tokens": 4}) as r:
                body = await r.json()
            # a non-streamed answer is bounded as a whole: first_token_s + idle_s
            assert r.status == 504 and "no answer within 0.8 s" in body["error"]["message"], body
            assert router.metrics.retries._value.get() == 0
            assert sum(not b.healthy for b in router.backends.values()) <= 1  # only the engine that stalled is blamed

    run(go())


def test_retry_budget_bounds_retries_to_a_share_of_requests():
    b = RetryBudget(RetryBudgetConfig(ratio=0.5, burst=2, timeout_retries=1))
    assert b.allow("connection", 0) and b.allow("connection", 0) and not b.allow("connection", 0)
    b.on_request()
    b.on_request()
    assert b.allow("timeout", 1) and not b.allow("timeout", 2)
    assert b.denied == 2


def test_engine_serves_requests_whose_slo_fields_it_cannot_use():
    """`vllm_xargs` come from clients and vLLM passes them on unchecked: the emulated engine
    reads them as the vLLM plugin does (slocore.integrations.xargs), so an unusable value
    gets the default, never a 500."""
    from slocore.integrations.xargs import MAX_PRIORITY, MAX_TASK_CHARS, slo_fields

    f, refused = slo_fields({"slo_ttft_ms": "soon", "slo_tpot_ms": -1, "priority": "abc", "task": {"a": 1}})
    assert f == {"priority": 0, "task": "{'a': 1}"}
    assert [k for k, _ in refused] == ["slo_ttft_ms", "slo_tpot_ms", "priority"]
    f, refused = slo_fields({"slo_ttft_ms": "250", "slo_deadline_ms": 4e3, "task": "t" * 999}, native_priority=-3)
    assert f == {"ttft": 0.25, "deadline": 4.0, "priority": 0, "task": "t" * MAX_TASK_CHARS} and not refused
    for raw, level in ((2, 2), (2.0, 2), ("7", 7), (2**62, MAX_PRIORITY), (-1, 0)):
        assert slo_fields({"priority": raw})[0]["priority"] == level, raw
    for raw in (1.5, float("nan"), float("inf"), True, None, [1], "x"):
        f, refused = slo_fields({"priority": raw})
        assert f["priority"] == 0 and refused == [("priority", raw)], raw
    assert slo_fields(["not", "a", "dict"], native_priority=4)[0] == {"priority": 4, "task": ""}

    async def go():
        e = eng.EmulatedEngine(**EMU)
        runner, url = await eng.start(e)
        try:
            async with aiohttp.ClientSession() as s:
                bodies = [
                    {"vllm_xargs": {"priority": "abc", "slo_ttft_ms": "soon"}},
                    {"vllm_xargs": {"priority": -5, "slo_tpot_ms": [1]}},
                    {"vllm_xargs": "garbage"},
                    {"priority": -1},
                ]
                out = []
                for b in bodies:
                    async with s.post(url + "/v1/completions", json={"prompt": "a b", "max_tokens": 3, **b}) as r:
                        out.append((r.status, (await r.json())["usage"]["completion_tokens"]))
                return out
        finally:
            await runner.cleanup()

    assert run(go()) == [(200, 3)] * 4
