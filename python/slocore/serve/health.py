"""Health: each backend's ``/metrics`` polled on a timer (the same scrape feeds the policies'
instance views). A backend goes down after ``fail_after`` consecutive failed polls (one
line logged with the reason when it goes down, one when it is back, nothing in between), or
at once when the request path fails it (``pool.BackendPool.fail``); a quarantined backend
stays down even when its ``/metrics`` answers, until its quarantine ends.
"""
from __future__ import annotations

import asyncio
import logging
import time

import aiohttp

from slocore.serve.backends import Backend, parse_vllm_metrics

log = logging.getLogger("slocore.serve")


class HealthChecker:
    def __init__(self, pool, session: aiohttp.ClientSession, interval_s: float, fail_after: int = 1):
        if fail_after < 1:
            raise ValueError(f"fail_after: must be >= 1, got {fail_after}")
        self.pool, self.session = pool, session
        self.interval_s, self.fail_after = interval_s, fail_after
        self._task: asyncio.Task | None = None

    async def poll(self, b: Backend, timeout: float) -> None:
        """Scrape one backend; update its engine metrics and health."""
        try:
            async with self.session.get(b.url + "/metrics", timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                if r.status != 200:
                    raise RuntimeError(f"/metrics answered HTTP {r.status}")
                b.polled = parse_vllm_metrics(await r.text())
        except Exception as e:  # noqa: BLE001 - any failure counts against the engine
            self._failed(b, f"{type(e).__name__}: {e}")
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
            await self.poll_all(max(1.0, self.interval_s * 2))
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._forever())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
