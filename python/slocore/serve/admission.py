"""Overload: shed a request (503 + ``Retry-After``) instead of holding an unbounded queue.

A request is shed on arrival when the queue (requests without a first token: not yet
assigned by the router, or waiting inside an engine) holds ``max_queue`` or more, and
- it is of the lowest priority waiting (lower-priority work is shed first, as llm-d's flow
  control does: a more urgent request is admitted past the bound, since priority-aware
  policies serve it before the queue), and
- it cannot meet its TTFT SLO: the requests ahead of it (as urgent or more) at the recent
  assignment rate take longer than its TTFT;
or in any case when the queue holds ``hard_factor * max_queue``. Shed requests are counted
per class (``slocore_requests{outcome="shed"}``).

    admission: {max_queue: 256, hard_factor: 2.0, rate_window_s: 10}
"""

from __future__ import annotations

import collections
import math
from typing import Annotated, Optional

from pydantic import BaseModel, ConfigDict, Field, Strict


class AdmissionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_queue: Optional[Annotated[int, Strict(), Field(gt=0)]] = None  # None: never shed
    hard_factor: Annotated[float, Field(ge=1, le=100, allow_inf_nan=False)] = 2.0
    rate_window_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 10.0


class Shed(Exception):
    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after = int(min(60, max(1, math.ceil(retry_after_s))))


class Admission:
    def __init__(self, cfg: AdmissionConfig, waiting, now):
        """`waiting()`: priority -> requests without a first token (called only when shedding is on)."""
        self.cfg, self.waiting, self.now = cfg, waiting, now
        self.assigned: collections.deque = collections.deque(maxlen=100_000)  # assignment times
        self.shed = 0

    def on_assigned(self) -> None:
        self.assigned.append(self.now())

    def rate(self) -> float:
        """Assignments per second over the last window."""
        lo = self.now() - self.cfg.rate_window_s
        while self.assigned and self.assigned[0] < lo:
            self.assigned.popleft()
        return len(self.assigned) / self.cfg.rate_window_s

    def check(self, priority: int, ttft_s: float) -> None:
        """Raise Shed when the request should not join the queue."""
        bound = self.cfg.max_queue
        if bound is None:
            return
        waiting = self.waiting()
        total = sum(n for n in waiting.values() if n > 0)
        if total < bound:
            return
        rate = self.rate()
        ahead = sum(n for p, n in waiting.items() if p <= priority and n > 0)
        wait = ahead / rate if rate > 0 else math.inf
        if total >= self.cfg.hard_factor * bound:
            self.shed += 1
            raise Shed(f"overloaded: {total} requests queued", wait if math.isfinite(wait) else 1.0)
        lowest = max((p for p, n in waiting.items() if n > 0), default=priority)
        if priority >= lowest and wait > ttft_s:
            self.shed += 1
            raise Shed(
                f"overloaded: {total} requests queued; the estimated wait of {wait:.3g} s exceeds the "
                f"TTFT SLO of {ttft_s:.3g} s",
                wait if math.isfinite(wait) else 1.0,
            )
