"""Health: each backend polled on a timer. Liveness comes from its ``/health`` (vLLM answers
it without touching the scheduler); ``/metrics`` feeds the policies' instance views only, so
an engine that is slow to render its metrics under load is not called down (an engine
without ``/health``, answering 404, is judged by its ``/metrics``). A backend goes down after
``fail_after`` (default 3) consecutive failed polls (one line logged with the reason when it
goes down, one when it is back, nothing in between), or at once when the request path fails
it (``pool.BackendPool.fail``); a quarantined backend stays down even when it answers, until
its quarantine ends.

The poll timeout scales with the machine: ``poll_timeout(interval_s)`` is at least 5 s, and
10 poll intervals: a loaded CPU machine (vLLM on CPU, several engines sharing cores) can take
seconds to answer while it is merely busy.
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp

from slocore.serve.backends import Backend, parse_vllm_metrics

log = logging.getLogger("slocore.serve")


def poll_timeout(interval_s: float) -> float:
    """Seconds a health poll may take before it counts as failed (see the module docstring)."""
    return max(5.0, 10 * interval_s)


class HealthChecker:
    def __init__(self, pool, session: aiohttp.ClientSession, interval_s: float, fail_after: int = 3):
        if fail_after < 1:
            raise ValueError(f"fail_after: must be >= 1, got {fail_after}")
        self.pool, self.session = pool, session
        self.interval_s, self.fail_after = interval_s, fail_after
        self._task: asyncio.Task | None = None

    async def poll(self, b: Backend, timeout: float) -> None:
        """Ask one backend's /health, scrape its /metrics; update its health and engine views."""
        ct = aiohttp.ClientTimeout(total=timeout)
        alive = None  # True/False from /health; None: the engine has no /health
        try:
            async with self.session.get(b.url + "/health", timeout=ct) as r:
                await r.read()
                if r.status != 404:
                    alive = r.status == 200
                    if not alive:
                        raise RuntimeError(f"/health answered HTTP {r.status}")
            async with self.session.get(b.url + "/metrics", timeout=ct) as r:
                if r.status != 200:
                    raise RuntimeError(f"/metrics answered HTTP {r.status}")
                b.polled = parse_vllm_metrics(await r.text())
        except Exception as e:  # noqa: BLE001 - any failure is a reason
            reason = f"{type(e).__name__}: {e}" if str(e) else f"{type(e).__name__} (no answer within {timeout:g} s)"
            if alive:  # /health answered: a slow or broken /metrics only leaves the views stale
                log.debug("backend %s: /metrics: %s", b.name, reason)
                self._answered(b)
            else:
                self._failed(b, reason)
        else:
            self._answered(b)
        b.last_poll = time.monotonic()

    def _answered(self, b: Backend) -> None:
        b.poll_failures = 0
        if self.pool.quarantined(b.name):
            b.healthy = False
            return
        if not b.healthy:
            log.warning("backend %s is back", b.name)
        b.healthy, b.last_error = True, ""

    def _failed(self, b: Backend, reason: str) -> None:
        b.poll_failures += 1
        b.last_error = reason
        if b.healthy and b.poll_failures >= self.fail_after:
            log.warning("backend %s is down after %d failed poll(s): %s", b.name, b.poll_failures, reason)
            b.healthy = False

    async def poll_all(self, timeout: float) -> None:
        await asyncio.gather(*(self.poll(b, timeout) for b in list(self.pool)), return_exceptions=True)

    async def _forever(self) -> None:
        while True:
            await self.poll_all(poll_timeout(self.interval_s))
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._forever())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
