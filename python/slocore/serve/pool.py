"""The backend pool: the engines the router sends to, by name, with their roles; adding and
removing them (the policies' instance sets follow through ``on_change``); live selection by
role; and quarantine: an engine that failed a request stays out of selection for
``quarantine_s`` even if its ``/metrics`` answers again (``health`` honours it).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

import slocore as _s
from slocore.profiles import engine_token_budget, hardware_profile
from slocore.roles import COLOCATED
from slocore.serve.backends import Backend
from slocore.serve.config import BackendConfig

log = logging.getLogger("slocore.serve")


class BackendPool:
    def __init__(self, disaggregated: bool, quarantine_s: float, on_change=lambda: None, new_prefix_index=None):
        self.disaggregated = disaggregated
        self.quarantine_s = quarantine_s
        self.on_change = on_change  # called after every add/remove (the dispatchers re-sync)
        self.new_prefix_index = new_prefix_index  # () -> a backend's prefix index (serve.prefix_index)
        self.backends: dict[str, Backend] = {}
        self._ids = itertools.count()
        self._quarantine_until: dict[str, float] = {}
        self._kv_tasks: dict = {}  # backend name -> its KV-event subscription task

    def __iter__(self):
        return iter(self.backends.values())

    def __len__(self) -> int:
        return len(self.backends)

    def role(self, role: str) -> list[Backend]:
        return [b for b in self.backends.values() if b.role == role]

    def healthy(self) -> list[Backend]:
        return [b for b in self.backends.values() if b.healthy]

    def add(self, bc: BackendConfig) -> Backend:
        if bc.name in self.backends:
            raise ValueError(f"backend {bc.name!r} exists")
        if self.disaggregated == (bc.role == COLOCATED):
            raise ValueError(
                f"role: {bc.role!r} does not fit this router's mode ({'P/D' if self.disaggregated else 'colocated'})"
            )
        hw, data = hardware_profile(bc.profile)
        if getattr(bc, "default_profile", False):
            log.warning(
                "backend %s: no latency profile given; the policies assume %r, measured on other hardware. "
                "Measure this engine with `slocore profile --url %s -o %s.json` and set profile: %s.json "
                "on the backend",
                bc.name,
                bc.profile,
                bc.url,
                bc.name,
                bc.name,
            )
        b = Backend(
            next(self._ids), bc.name, bc.url, bc.role, _s.LatencyModel(hw.coeffs), int(hw.kv_blocks), int(hw.block_size)
        )
        b.max_batch_tokens = engine_token_budget(data)
        if self.new_prefix_index is not None:
            b.prefix_index = self.new_prefix_index()
        if getattr(bc, "kv_events", None):
            self._follow_kv_events(b, bc.kv_events)
        self.backends[b.name] = b
        self.on_change()
        return b

    def _follow_kv_events(self, b: Backend, endpoint: str) -> None:
        """Precise prefix mode: subscribe to the engine's KV events (serve.kv_events)."""
        from slocore.serve.kv_events import KvBlockSet, subscribe

        b.kv_events = KvBlockSet(b.name)
        try:
            self._kv_tasks[b.name] = asyncio.get_running_loop().create_task(subscribe(b.kv_events, endpoint))
        except RuntimeError:
            log.warning(
                "backend %s: no event loop to follow KV events at %s; approximate prefix index", b.name, endpoint
            )

    def remove(self, name: str) -> None:
        if name not in self.backends:
            raise KeyError(name)
        task = self._kv_tasks.pop(name, None)
        if task is not None:
            task.cancel()
        self.backends[name].healthy = False
        del self.backends[name]
        self._quarantine_until.pop(name, None)
        self.on_change()

    # --- quarantine ----------------------------------------------------------------------
    def fail(self, b: Backend, kind: str, message: str) -> None:
        """The request path saw `b` fail: down now, and quarantined for quarantine_s."""
        b.failures += 1
        b.healthy = False
        b.last_error = message
        self._quarantine_until[b.name] = time.monotonic() + self.quarantine_s
        log.warning("%s", message)

    def quarantined(self, name: str) -> bool:
        until = self._quarantine_until.get(name)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._quarantine_until[name]
        return False
