"""Backend pool and health: hysteresis on /metrics failures, quarantine as pool state."""

import asyncio
import logging

import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from aiohttp import web  # noqa: E402

from slocore.serve.config import BackendConfig  # noqa: E402
from slocore.serve.eventloop import serve_app  # noqa: E402
from slocore.serve.health import HealthChecker  # noqa: E402
from slocore.serve.pool import BackendPool  # noqa: E402

PAGE = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"


async def fake_engine(state: dict):
    async def metrics(request):
        if state["fail"]:
            return web.Response(status=500, text="boom")
        return web.Response(text=PAGE, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return await serve_app(app)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_down_after_n_consecutive_failures_one_log_line_each_way(caplog):
    async def go():
        state = {"fail": False}
        runner, url = await fake_engine(state)
        pool = BackendPool(disaggregated=False, quarantine_s=60)
        b = pool.add(BackendConfig("e0", url))
        async with aiohttp.ClientSession() as s:
            hc = HealthChecker(pool, s, interval_s=0.1, fail_after=3)
            await hc.poll(b, 2.0)
            assert b.healthy and b.polled["running"] == 3
            state["fail"] = True
            with caplog.at_level(logging.WARNING, logger="slocore.serve"):
                for _ in range(2):
                    await hc.poll(b, 2.0)
                assert b.healthy and b.poll_failures == 2  # not yet: 2 < 3
                for _ in range(4):
                    await hc.poll(b, 2.0)
                assert not b.healthy and "HTTP 500" in b.last_error
                state["fail"] = False
                await hc.poll(b, 2.0)
                await hc.poll(b, 2.0)
                assert b.healthy and b.poll_failures == 0 and b.last_error == ""
            msgs = [r.getMessage() for r in caplog.records]
            assert sum("is down" in m for m in msgs) == 1 and "after 3 failed poll(s)" in msgs[0]
            assert sum("is back" in m for m in msgs) == 1
            state["fail"] = True
            await hc.poll(b, 2.0)  # the count starts again after a success
            assert b.healthy and b.poll_failures == 1
        await runner.cleanup()

    run(go())


def test_a_failed_backend_stays_out_until_its_quarantine_ends():
    async def go():
        runner, url = await fake_engine({"fail": False})
        pool = BackendPool(disaggregated=False, quarantine_s=0.3)
        b = pool.add(BackendConfig("e0", url))
        async with aiohttp.ClientSession() as s:
            hc = HealthChecker(pool, s, interval_s=0.1)
            pool.fail(b, "connection", "backend e0: refused")
            assert not b.healthy and b.failures == 1 and pool.healthy() == []
            await hc.poll(b, 2.0)  # /metrics answers, but the quarantine holds
            assert not b.healthy and pool.quarantined("e0")
            await asyncio.sleep(0.35)
            await hc.poll(b, 2.0)
            assert b.healthy and not pool.quarantined("e0") and pool.healthy() == [b]
        await runner.cleanup()

    run(go())


def test_pool_checks_role_against_mode_and_names():
    changes = []
    pool = BackendPool(disaggregated=True, quarantine_s=1, on_change=lambda: changes.append(1))
    with pytest.raises(ValueError, match="does not fit"):
        pool.add(BackendConfig("c", "http://127.0.0.1:1", "colocated"))
    pool.add(BackendConfig("p", "http://127.0.0.1:1", "prefill"))
    with pytest.raises(ValueError, match="exists"):
        pool.add(BackendConfig("p", "http://127.0.0.1:2", "prefill"))
    pool.add(BackendConfig("d", "http://127.0.0.1:2", "decode"))
    assert [b.name for b in pool.role("decode")] == ["d"] and len(changes) == 2
    pool.remove("p")
    with pytest.raises(KeyError):
        pool.remove("p")
    assert [b.name for b in pool] == ["d"] and len(changes) == 3
    with pytest.raises(ValueError, match="fail_after"):
        HealthChecker(pool, None, 1.0, fail_after=0)


def test_an_engine_slow_to_answer_metrics_stays_up_and_serves(caplog):
    """/health answers at once, /metrics only after the poll timeout: the engine is busy, not
    down (so the router never answers 503 for it); no 'is down' line."""

    async def go():
        async def health(request):
            return web.Response(text="")

        async def metrics(request):
            await asyncio.sleep(1.0)
            return web.Response(text=PAGE, content_type="text/plain")

        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_get("/metrics", metrics)
        runner, url = await serve_app(app)
        pool = BackendPool(disaggregated=False, quarantine_s=60)
        b = pool.add(BackendConfig("e0", url))
        with caplog.at_level(logging.WARNING, logger="slocore.serve"):
            async with aiohttp.ClientSession() as s:
                hc = HealthChecker(pool, s, interval_s=0.05)
                for _ in range(5):
                    await hc.poll(b, 0.1)  # every /metrics scrape times out
                assert b.healthy and b.poll_failures == 0
        assert not any("is down" in r.getMessage() for r in caplog.records)
        await runner.cleanup()

    run(go())


def test_a_stale_pooled_connection_is_retried_once_and_blames_nobody():
    from slocore.serve.metrics import RouterMetrics
    from slocore.serve.upstream import Upstream, stale_connection

    class Stale:
        def __init__(self, exc):
            self.exc, self.calls = exc, 0

        async def post(self, url, **kw):
            self.calls += 1
            raise self.exc

    class Fresh:
        calls = 0

        async def post(self, url, **kw):
            Fresh.calls += 1
            return "response"

    assert stale_connection(aiohttp.ServerDisconnectedError())
    assert stale_connection(aiohttp.ClientOSError(32, "Can not write request body"))
    refused = aiohttp.ClientConnectorError(None, OSError(111, "refused"))
    assert not stale_connection(refused)

    async def go():
        m = RouterMetrics()
        up = Upstream(Stale(aiohttp.ServerDisconnectedError()), None, None, m, lambda: 0.0, Fresh())
        assert await up._send("http://x", {}, None) == "response" and Fresh.calls == 1
        assert m.stale_retries._value.get() == 1
        up = Upstream(Stale(refused), None, None, m, lambda: 0.0, Fresh())
        with pytest.raises(aiohttp.ClientConnectorError):  # a refusal is the engine's: not retried here
            await up._send("http://x", {}, None)
        assert Fresh.calls == 1

    run(go())
