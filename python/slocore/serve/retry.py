"""The router's retry budget: one bad request must not be re-sent to every engine in turn.

Two rules (Envoy's retry budget, applied to LLM requests):
- a request whose attempt timed out (the engine stayed silent: it may be the request that
  stalls it) is re-sent at most ``timeout_retries`` times (default 0);
- all retries together stay within ``ratio`` of recent requests: every new request adds
  ``ratio`` to a bucket of at most ``burst`` retries, every retry takes one.

    retry_budget: {ratio: 0.2, burst: 10, timeout_retries: 0}
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict


class RetryBudgetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ratio: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 0.2
    burst: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 10.0
    timeout_retries: Annotated[int, Strict(), Field(ge=0)] = 0


class RetryBudget:
    def __init__(self, cfg: RetryBudgetConfig):
        self.cfg = cfg
        self.tokens = cfg.burst
        self.denied = 0

    def on_request(self) -> None:
        self.tokens = min(self.cfg.burst, self.tokens + self.cfg.ratio)

    def allow(self, kind: str, timeouts_so_far: int) -> bool:
        """May a request whose attempt just failed with `kind` be re-sent? (takes a token)"""
        if kind == "timeout" and timeouts_so_far > self.cfg.timeout_retries:
            self.denied += 1
            return False
        if self.tokens < 1:
            self.denied += 1
            return False
        self.tokens -= 1
        return True
