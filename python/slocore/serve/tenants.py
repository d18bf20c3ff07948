"""Tenants: API keys (``Authorization: Bearer <key>``) map to tenants, each with an SLO class,
how far its clients may change that class, a priority cap and token-bucket rate limits.

    tenants:
      require_key: false           # no/unknown key: 401 when true, else the `anonymous` tenant
      anonymous: {client_slo: ignore, slo_class: batch, slo: {ttft_ms: 5000, tpot_ms: 200},
                  best_priority: 1, requests_per_min: 60}
      list:
        - name: gold
          api_keys: [k-gold-1]
          slo_class: interactive     # the metrics label of its requests
          slo: {ttft_ms: 300, tpot_ms: 50}          # its class: used when the client sends none
          slo_max: {ttft_ms: 3000, tpot_ms: 200}    # cap: client SLOs clamped into [slo, slo_max]
          client_slo: cap            # trust | cap (default) | ignore (always the class)
          priority: 0                # default priority; best_priority: the most urgent allowed
          best_priority: 0           # (lower = more urgent, as in slo.priorities)
          requests_per_min: 600      # token buckets (burst = one minute's worth); over -> 429
          tokens_per_min: 200000     # prompt + max_tokens, charged at admission

Without a ``tenants`` section every client is trusted as before.
"""

from __future__ import annotations

import builtins
import hashlib
import math
import time
from typing import Annotated, Literal, Optional

from multidict import CIMultiDict
from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from slocore.serve.openai import BadRequest

SLO_FIELDS = ("slo_ttft_ms", "slo_tpot_ms", "slo_deadline_ms", "slo_class")
SLO_HEADERS = ("x-slo-ttft-ms", "x-slo-tpot-ms", "x-slo-deadline-ms", "x-slo-class")
_Pos = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Slo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ttft_ms: _Pos
    tpot_ms: _Pos


class TenantConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "anonymous"
    api_keys: list[str] = Field(default_factory=list)
    slo_class: Optional[str] = None
    slo: Optional[_Slo] = None
    slo_max: Optional[_Slo] = None
    client_slo: Literal["trust", "cap", "ignore"] = "cap"
    priority: Optional[Annotated[int, Strict()]] = None
    best_priority: Optional[Annotated[int, Strict()]] = None
    requests_per_min: Optional[_Pos] = None
    tokens_per_min: Optional[_Pos] = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.slo_max is not None and self.slo is None:
            raise ValueError("slo_max needs slo (the tightest class the tenant may ask for)")
        if (
            self.slo
            and self.slo_max
            and (self.slo_max.ttft_ms < self.slo.ttft_ms or self.slo_max.tpot_ms < self.slo.tpot_ms)
        ):
            raise ValueError("slo_max must be at least slo")
        return self


class TenantsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    require_key: bool = False
    anonymous: TenantConfig = Field(default_factory=lambda: TenantConfig(client_slo="trust"))
    list: builtins.list[TenantConfig] = Field(default_factory=builtins.list)

    @model_validator(mode="after")
    def _unique(self):
        names, keys = set(), set()
        for t in self.list:
            if t.name in names:
                raise ValueError(f"duplicate tenant name {t.name!r}")
            names.add(t.name)
            for k in t.api_keys:
                if k in keys:
                    raise ValueError(f"tenant {t.name!r}: an api key is given to two tenants")
                keys.add(k)
        return self


class TokenBucket:
    """`rate_per_min` per minute, holding at most one minute's worth."""

    def __init__(self, rate_per_min: float, now=time.monotonic):
        self.rate, self.cap, self.now = rate_per_min / 60.0, rate_per_min, now
        self.level, self.t = rate_per_min, now()

    def _refill(self):
        t = self.now()
        self.level = min(self.cap, self.level + (t - self.t) * self.rate)
        self.t = t

    def wait_for(self, n: float) -> float:
        """Seconds until `n` is available (0: available now); n above the cap waits a full refill."""
        self._refill()
        need = min(n, self.cap) - self.level
        return 0.0 if need <= 0 else need / self.rate

    def take(self, n: float) -> None:
        self.level -= min(n, self.cap)


class RateLimited(Exception):
    def __init__(self, what: str, retry_after_s: float):
        super().__init__(f"rate limit: {what}; retry after {math.ceil(retry_after_s)} s")
        self.retry_after = max(1, math.ceil(retry_after_s))


class Unauthorized(Exception):
    pass


class Tenant:
    def __init__(self, cfg: TenantConfig, now=time.monotonic):
        self.cfg, self.name = cfg, cfg.name
        self.requests = TokenBucket(cfg.requests_per_min, now) if cfg.requests_per_min else None
        self.tokens = TokenBucket(cfg.tokens_per_min, now) if cfg.tokens_per_min else None
        self.limited = 0

    def admit(self, tokens: int) -> None:
        """Charge one request of `tokens` (prompt + max_tokens); RateLimited when over."""
        waits = []
        if self.requests:
            waits.append(("requests_per_min", self.requests.wait_for(1)))
        if self.tokens:
            waits.append(("tokens_per_min", self.tokens.wait_for(tokens)))
        over = [(w, what) for what, w in waits if w > 0]
        if over:
            self.limited += 1
            w, what = max(over)
            raise RateLimited(f"tenant {self.name} over {what}", w)
        if self.requests:
            self.requests.take(1)
        if self.tokens:
            self.tokens.take(tokens)

    def slo_inputs(self, body: dict, headers) -> tuple[dict, dict]:
        """The (body, headers) the SLO resolver reads: priority capped, client SLO fields
        dropped when the tenant ignores them. Raises BadRequest on a malformed priority."""
        c = self.cfg
        body = dict(body)
        prio = body.get("priority", headers.get("x-priority"))
        if prio is not None and c.client_slo != "trust":
            try:
                if isinstance(prio, bool) or isinstance(prio, float):
                    raise ValueError
                prio = int(prio)
            except (TypeError, ValueError, OverflowError):
                raise BadRequest(f"priority: expected an integer, got {prio!r}") from None
        if prio is None and c.priority is not None:
            prio = c.priority
        if prio is not None and c.best_priority is not None and c.client_slo != "trust":
            prio = max(prio, c.best_priority)
        if prio is not None:
            body["priority"] = prio
        drop = ("x-priority", *SLO_HEADERS) if c.client_slo == "ignore" else ("x-priority",)
        if c.client_slo == "ignore":
            for f in SLO_FIELDS:
                body.pop(f, None)
        return body, CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in drop)

    def apply(self, sent: dict, ttft: float, tpot: float, cls: str) -> tuple[float, float, str]:
        """The tenant's class over the resolved SLO (seconds); `sent`: which SLO fields the
        client gave."""
        c = self.cfg
        if c.slo is not None:
            lo_t, lo_p = c.slo.ttft_ms / 1e3, c.slo.tpot_ms / 1e3
            hi_t = c.slo_max.ttft_ms / 1e3 if c.slo_max else math.inf
            hi_p = c.slo_max.tpot_ms / 1e3 if c.slo_max else math.inf
            if c.client_slo == "ignore" or not sent.get("ttft"):
                ttft = lo_t
            elif c.client_slo == "cap":
                ttft = min(max(ttft, lo_t), hi_t)
            if c.client_slo == "ignore" or not sent.get("tpot"):
                tpot = lo_p
            elif c.client_slo == "cap":
                tpot = min(max(tpot, lo_p), hi_p)
        if c.slo_class is not None and (c.client_slo != "trust" or not sent.get("cls")):
            cls = c.slo_class
        return ttft, tpot, cls


class Tenants:
    def __init__(self, cfg: TenantsConfig, now=time.monotonic):
        self.cfg = cfg
        self.anonymous = Tenant(cfg.anonymous, now)
        self.by_key: dict[bytes, Tenant] = {}
        self.all = [self.anonymous]
        for tc in cfg.list:
            t = Tenant(tc, now)
            self.all.append(t)
            for k in tc.api_keys:  # looked up by digest: no timing on the key's characters
                self.by_key[hashlib.sha256(k.encode()).digest()] = t

    def classes(self) -> list[str]:
        return [t.cfg.slo_class for t in self.all if t.cfg.slo_class]

    def identify(self, headers) -> Tenant:
        auth = headers.get("Authorization", "")
        key = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        t = self.by_key.get(hashlib.sha256(key.encode()).digest()) if key else None
        if t is None:
            if self.cfg.require_key:
                raise Unauthorized("an API key of a tenant is required: 'Authorization: Bearer <key>'")
            return self.anonymous
        return t


def sent_fields(body: dict, headers) -> dict:
    return {
        "ttft": "slo_ttft_ms" in body or "x-slo-ttft-ms" in headers,
        "tpot": "slo_tpot_ms" in body or "x-slo-tpot-ms" in headers,
        "cls": "slo_class" in body or "x-slo-class" in headers,
    }
