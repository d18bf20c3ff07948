"""The router's side of a global policy: one ``Dispatcher`` per role wraps a policy chosen by
name, keeps its instance set in step with the backends, and turns ``submit``/``poll`` into an
awaitable assignment (push policies answer at once; pull policies when ``poll`` releases the
request, the dispatcher waking at ``next_wakeup``). A request that leaves before it is
assigned (timeout, client gone) gets ``on_cancelled``; one assigned but then abandoned gets
``on_finished`` (the event contract of ``csrc/slocore/policy/global_policy.h``).
"""

from __future__ import annotations

import asyncio
import importlib
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


def make_policy(name: str, params: dict, field: str = "policy"):
    """A registered policy by name, or a Python ``slocore.GlobalPolicy`` subclass by import
    path ``module:Class`` built with ``Class(**params)`` (as ``simulate()`` takes Python
    policies). ValueError naming the config field when it cannot be made."""
    if ":" not in name:
        return _s.make_global_policy(name, dict(params))
    return make_python_object(name, params, _s.GlobalPolicy, field)


def make_python_object(name: str, params: dict, base: type, field: str):
    """``Class(**params)`` for the `base` subclass at import path ``module:Class``;
    ValueError naming the config field (`field`.name / `field`.params) when it cannot be made."""
    mod, _, attr = name.partition(":")
    try:
        obj = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001 - any import failure is a config error
        raise ValueError(f"{field}.name: cannot import {name!r} ({type(e).__name__}: {e})") from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"{field}.name: {name!r} is not a slocore.{base.__name__} subclass")
    try:
        return obj(**dict(params))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{field}.params: {name}: {e}") from None


class Dispatcher:
    """One global policy (by name or import path) over the backends of some roles, with its
    wake-up loop. `field` is the config field that names the policy (for errors)."""

    def __init__(
        self, label: str, name: str, params: dict, backends_fn, metrics: RouterMetrics, now_fn, field: str = "policy"
    ):
        self.label, self.name = label, name
        self.policy = make_policy(name, params, field)
        self.backends_fn = backends_fn
        self.metrics = metrics
        metrics.policy(label, name)  # slocore_policy_info{role, policy}
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
            self.metrics.decision(self.label, self.name, (time.perf_counter() - t) / len(asg), len(asg))
        for a in asg:
            fut = self.futures.pop(a.request, None)
            if fut is None or fut.done():
                continue
            b = bs.get(a.instance)
            if b is None:
                self.policy.on_finished(a.request, a.instance, self.now())
                fut.set_exception(NoBackend(f"{self.label} policy {self.name} assigned unknown instance {a.instance}"))
            else:
                fut.set_result(b)

    def submit(self, req, expected_handoff: float = math.nan) -> asyncio.Future:
        """``policy.submit``; the future resolves to the backend once a poll assigns it."""
        if not any(b.healthy and not b.draining for b in self.backends_fn()):
            raise NoBackend(f"no healthy {self.label} backend")
        self.sync_instances()
        fut = asyncio.get_running_loop().create_future()
        self.futures[req.id] = fut
        t = time.perf_counter()
        self.policy.submit(req, self.now(), expected_handoff)
        self.metrics.child(self.metrics.decision_latency, self.label, self.name).observe(time.perf_counter() - t)
        return fut

    def nudge(self) -> None:
        """An engine's load just fell (a first token, a request's end): a policy holding
        requests (a pull policy, slo_predict's `hold`) is polled now, not at the next tick."""
        if self.futures and self._task is not None and not self._task.done():
            self._wake.set()

    def poll_now(self) -> None:
        """Poll at once; keep the wake-up loop running while requests wait."""
        self._poll()
        if self.futures:
            self._ensure_loop()
            self._wake.set()

    async def wait(self, req, fut: asyncio.Future, timeout: float) -> Backend:
        """The backend of a submitted request; ``on_cancelled`` if it never gets one."""
        try:
            if not fut.done():
                await asyncio.wait_for(asyncio.shield(fut), timeout)
            return fut.result()
        except asyncio.TimeoutError:
            self.abandon(req.id, fut)
            raise NoBackend(f"{self.label} policy {self.name} assigned no instance within {timeout:g} s") from None
        except asyncio.CancelledError:
            self.abandon(req.id, fut)
            raise
        finally:
            self.futures.pop(req.id, None)

    def abandon(self, rid: int, fut: asyncio.Future) -> None:
        """The request will not use this dispatcher's assignment: ``on_finished`` on the
        instance it got, or ``on_cancelled`` if it got none yet."""
        self.futures.pop(rid, None)
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            self.policy.on_finished(rid, fut.result().id, self.now())
        elif not fut.done():
            fut.cancel()
            self.policy.on_cancelled(rid, self.now())

    async def assign(self, req, timeout: float, expected_handoff: float = math.nan, before_poll=None) -> Backend:
        """submit, `before_poll()` (P/D: the decode policy's ``on_prefill_done``), poll, wait."""
        fut = self.submit(req, expected_handoff)
        if before_poll is not None:
            before_poll()
        self.poll_now()
        return await self.wait(req, fut, timeout)

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
