"""A request's SLO and priority: body fields (``slo_ttft_ms``, ``slo_tpot_ms``,
``slo_deadline_ms``, ``priority``, ``slo_class``), else headers (``x-slo-ttft-ms``, ...),
else HFX's adaptive priority-to-SLO mapper (HFX Alg. 2 / Eq. 6) when configured, else the
config's priority table. The mapper needs to know which priorities still wait for a first
assignment, and each request's queueing time: ``SloResolver`` keeps both.
"""

from __future__ import annotations

import math

from slocore.serve.config import ServeConfig
from slocore.serve.openai import BadRequest

ROUTER_FIELDS = ("slo_ttft_ms", "slo_tpot_ms", "slo_deadline_ms", "priority", "slo_class")


def _number(body: dict, headers, field: str, header: str, conv):
    v = body.get(field)
    src = field
    if v is None and header in headers:
        v, src = headers[header], header
    if v is None:
        return None
    try:
        if isinstance(v, bool):
            raise ValueError
        x = conv(v)
    except (TypeError, ValueError, OverflowError):
        raise BadRequest(f"{src}: expected a number, got {v!r}") from None
    if conv is int and (x != v if isinstance(v, float) else False):
        raise BadRequest(f"{src}: expected an integer, got {v!r}")
    if conv is int and abs(x) >= 2**31:
        raise BadRequest(f"{src}: out of range, got {v!r}")
    if conv is float and not (math.isfinite(x) and x > 0):
        raise BadRequest(f"{src}: must be a finite number > 0, got {v!r}")
    return x


class SloResolver:
    def __init__(self, cfg: ServeConfig, mapper, now):
        self.cfg, self.mapper, self.now = cfg, mapper, now
        self.pending: dict[int, int] = {}  # priority -> requests without an assignment yet

    def resolve(self, body: dict, headers) -> tuple[float, float, float | None, int, str]:
        """(ttft_s, tpot_s, deadline_s or None, priority, slo_class); BadRequest names the field."""
        prio = _number(body, headers, "priority", "x-priority", int)
        prio = 0 if prio is None else prio
        slo = self.cfg.slo_for(prio)
        ttft = _number(body, headers, "slo_ttft_ms", "x-slo-ttft-ms", float)
        tpot = _number(body, headers, "slo_tpot_ms", "x-slo-tpot-ms", float)
        if self.mapper is not None and (ttft is None or tpot is None):
            higher = any(n > 0 for q, n in self.pending.items() if q < prio)
            try:
                mt, mp = self.mapper.map(prio, higher)
            except (ValueError, KeyError, IndexError) as e:
                raise BadRequest(f"priority: {e}") from None
            ttft, tpot = ttft or mt * 1e3, tpot or mp * 1e3
        ttft = ttft or slo.ttft_ms
        tpot = tpot or slo.tpot_ms
        dl = _number(body, headers, "slo_deadline_ms", "x-slo-deadline-ms", float) or slo.deadline_ms
        cls = body.get("slo_class", headers.get("x-slo-class"))
        if cls is not None and not isinstance(cls, str):
            raise BadRequest(f"slo_class: must be a string, got {cls!r}")
        return ttft / 1e3, tpot / 1e3, (dl / 1e3 if dl else None), prio, cls or f"priority{prio}"

    def queued(self, ctx) -> None:
        p = ctx.template.priority
        self.pending[p] = self.pending.get(p, 0) + 1

    def unqueued(self, ctx) -> None:
        """The request left without ever being dispatched."""
        if not ctx.dispatched:
            self.pending[ctx.template.priority] -= 1

    def dispatched(self, ctx) -> None:
        """The first assignment of the request (later attempts change nothing)."""
        if ctx.dispatched:
            return
        ctx.dispatched = True
        p = ctx.template.priority
        self.pending[p] = self.pending.get(p, 1) - 1
        ctx.queue_time = self.now() - ctx.template.arrival
        if self.mapper is not None:
            self.mapper.on_dispatch(p, ctx.queue_time)

    def finished(self, ctx, m) -> None:
        """Feed HFX's sliding windows with a finished request's metrics `m`."""
        if self.mapper is not None and m.ttft == m.ttft:
            self.mapper.record(ctx.template.priority, m.ttft, ctx.queue_time, m.tpot if m.tpot == m.tpot else 0.0)
