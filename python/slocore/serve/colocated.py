"""Colocated mode: one global policy over engines that both prefill and decode; a request
goes to the engine the policy picks, as it is."""

from __future__ import annotations

from slocore.roles import COLOCATED
from slocore.serve.dispatch import Dispatcher


class ColocatedFlow:
    def __init__(self, cfg, pool, metrics, now):
        self.colocated = Dispatcher(
            COLOCATED, cfg.policy.name, cfg.policy.params, lambda: pool.role(COLOCATED), metrics, now
        )
        self.dispatchers = [self.colocated]
        self.final = self.colocated  # the dispatcher of the engine that produces the answer

    async def prepare(self, ctx, fwd: dict) -> dict:
        """The body for the final engine (nothing to do before it)."""
        return fwd

    async def assign(self, ctx, req, timeout: float):
        """The engine that produces the answer (submit at arrival, then poll)."""
        return await self.colocated.assign(req, timeout)
