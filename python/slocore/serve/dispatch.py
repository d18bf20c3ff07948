"""The router's side of a global policy: one ``Dispatcher`` per role wraps a policy chosen by
name, keeps its instance set in step with the backends, and turns ``submit``/``poll`` into an
awaitable assignment (push policies answer at once; pull policies when ``poll`` releases the
request, the dispatcher waking at ``next_wakeup``).
"""
from __future__ import annotations

import asyncio
import math
import time

import slocore as _s
from slocore.serve.backends import Backend
from slocore.serve.metrics import RouterMetrics


class NoBackend(Exception):
    pass


def priority_mapper_class():
    """HFX's priority-to-SLO mapper from the C++ core, or None in a build without it."""
    import slocore._core as core

    return getattr(_s, "PriorityMapper", None) or getattr(core, "PriorityMapper", None)


class Dispatcher:
    """One global policy (by name) over the backends of some roles, with its wake-up loop."""

    def __init__(self, label: str, name: str, params: dict, backends_fn, metrics: RouterMetrics, now_fn):
        self.label, self.name = label, name
        self.policy = _s.make_global_policy(name, dict(params))
        self.backends_fn = backends_fn
        self.metrics = metrics
        self.now = now_fn
        self.futures: dict[int, asyncio.Future] = {}
        self._wake = asyncio.Event()
        self._task = None
        self._known: set[int] = set()

    def describe(self) -> dict:
        return {"name": self.policy.name(), "params": dict(self.policy.params())}

    def sync_instances(self):
        ids = {b.id: b for b in self.backends_fn()}
        for i in set(ids) - self._known:
            self.policy.on_instance_added(i, ids[i].view().role, self.now())
        for i in self._known - set(ids):
            self.policy.on_instance_removed(i, self.now())
        self._known = set(ids)

    def _poll(self):
        bs = {b.id: b for b in self.backends_fn() if b.healthy}
        if not bs or not self.futures:
            return
        t = time.perf_counter()
        asg = self.policy.poll(self.now(), [b.view() for b in bs.values()])
        if asg:
            self.metrics.decision(self.label, (time.perf_counter() - t) / len(asg), len(asg))
        for a in asg:
            fut = self.futures.pop(a.request, None)
            if fut is None or fut.done():
                continue
            b = bs.get(a.instance)
            if b is None:
                fut.set_exception(NoBackend(f"{self.label} policy {self.name} assigned unknown instance {a.instance}"))
            else:
                fut.set_result(b)

    async def assign(self, req, timeout: float) -> Backend:
        if not any(b.healthy for b in self.backends_fn()):
            raise NoBackend(f"no healthy {self.label} backend")
        self.sync_instances()
        fut = asyncio.get_running_loop().create_future()
        self.futures[req.id] = fut
        t = time.perf_counter()
        self.policy.submit(req, self.now())
        self.metrics.child(self.metrics.decision_latency, self.label).observe(time.perf_counter() - t)
        self._poll()
        if not fut.done():
            self._ensure_loop()
            self._wake.set()
        try:
            if fut.done():  # push policies: decided at once
                return fut.result()
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise NoBackend(f"{self.label} policy {self.name} assigned no instance within {timeout:g} s") from None
        finally:
            self.futures.pop(req.id, None)

    def _ensure_loop(self):
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self):
        while self.futures:
            nw = self.policy.next_wakeup()
            delay = 0.05
            if math.isfinite(nw):
                delay = min(delay, max(0.0, nw - self.now()))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except asyncio.TimeoutError:
                pass
            self._poll()

    def close(self):
        if self._task is not None:
            self._task.cancel()
