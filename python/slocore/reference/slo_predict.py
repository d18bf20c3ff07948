"""Reference for csrc/slocore/stack/slo_predict.h: the slocore stack's dispatch decision.

For request r on instance v (a C++ InstanceView, read-only) it predicts, with v's latency
model (ProServe Eq. 5-7): the finish of every pending prefill in the engine's order
(first-token deadline, ProServe Eq. 3, or fifo) with and without r, each iteration carrying
v's running decodes and the fixed cost; r's TTFT from its uncached prompt tokens; r's TPOT
as one iteration of the decode batch it joins. The choice: least predicted SLO loss (first
tokens made late, r's own included), then most normalised slack, then earliest first token,
then longest cached prefix, then view order; within `margin` of that best predicted first
token (same loss, on time when it is): the most prefill time saved by the cached prefix, then
the fewest outstanding. Same floating-point operation order as C++.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from slocore.reference.proserve import Model

INF = math.inf


@dataclass
class Pending:
    deadline: float
    tokens: int
    cost: float
    context: int


@dataclass
class Prediction:
    ttft: float = 0.0
    tpot: float = 0.0
    loss: int = 0
    slack: float = 0.0
    finish: float = 0.0
    cached: int = 0
    saved: float = 0.0  # predicted prefill time the cached prefix saves, s
    outstanding: int = 0


def _deadline(r, i: int) -> float:  # ProServe Eq. 3; the first token without the TPOT term (0 * inf)
    if i == 1:
        return r.arrival + r.slo.ttft
    return r.arrival + r.slo.ttft + float(i - 1) * r.slo.tpot


def _pending(m: Model, s) -> Pending:
    k = s.to_compute
    return Pending(_deadline(s.request, s.generated + 1), k, m.prefill(k, s.computed), s.request.prompt_len)


def _is_prefill_role(v) -> bool:
    return v.role.name == "PREFILL"


def predict(v, r, cached: int, now: float, extra=(), order: str = "deadline") -> Prediction:
    m = Model(v.model)
    prefill_only = _is_prefill_role(v)
    per_iter = m.overhead()
    tpot = m.overhead()
    q = []
    for s in v.running:
        if s.in_prefill:
            q.append(_pending(m, s))
        elif not prefill_only:
            d = m.decode(s.context_len)
            per_iter += d
            tpot += d
    q += [_pending(m, s) for s in v.waiting]
    q += list(extra)
    own = max(1, r.prompt_len - cached)
    mine = Pending(_deadline(r, 1), own, m.prefill(own, cached), r.prompt_len)
    if not prefill_only:
        for x in q:
            tpot += m.decode(x.context)
        tpot += m.decode(mine.context)
    pos = len(q)
    if order == "deadline":
        q.sort(key=lambda x: x.deadline)  # stable
        pos = sum(1 for x in q if not mine.deadline < x.deadline)
    budget = max(1, v.max_batch_tokens)
    start = max(0.0, v.busy_until - now)

    def finish(cost, tokens):
        return now + (start + cost + float((tokens + budget - 1) // budget) * per_iter)

    out = Prediction(cached=cached, outstanding=len(v.running) + len(v.waiting) + len(extra))
    out.saved = m.prefill(r.prompt_len, 0) - mine.cost
    cost, tokens = 0.0, 0
    for i in range(len(q) + 1):
        if i == pos:
            out.finish = finish(cost + mine.cost, tokens + mine.tokens)
            if out.finish > mine.deadline:
                out.loss += 1
        if i == len(q):
            break
        cost += q[i].cost
        tokens += q[i].tokens
        if i >= pos:
            late_without = finish(cost, tokens) > q[i].deadline
            late_with = finish(cost + mine.cost, tokens + mine.tokens) > q[i].deadline
            if late_with and not late_without:
                out.loss += 1
    out.ttft = out.finish - r.arrival
    out.tpot = 0.0 if prefill_only else tpot
    ts = (mine.deadline - out.finish) / r.slo.ttft if math.isfinite(r.slo.ttft) and r.slo.ttft > 0 else INF
    has_tpot = not prefill_only and math.isfinite(r.slo.tpot) and r.slo.tpot > 0
    tp = (r.slo.tpot - out.tpot) / r.slo.tpot if has_tpot else INF
    out.slack = min(ts, tp)
    return out


def better(a: Prediction, b: Prediction) -> bool:
    if a.loss != b.loss:
        return a.loss < b.loss
    if a.slack != b.slack:
        return a.slack > b.slack
    if a.finish != b.finish:
        return a.finish < b.finish
    return a.cached > b.cached


def choose_placement(preds: list, now: float, margin: float) -> int:
    """The best by `better`, unless a candidate within `margin` of its predicted first token
    (same loss, on time when the best is) saves more prefill time by its cached prefix or,
    saving the same, has fewer outstanding requests."""
    best = -1
    for i, p in enumerate(preds):
        if best < 0 or better(p, preds[best]):
            best = i
    if best < 0:
        return best
    b = preds[best]
    bound = now + (b.finish - now) * (1.0 + margin)
    pick = best
    for i, c in enumerate(preds):
        if c.loss != b.loss or c.finish > bound or (b.slack >= 0 and not c.slack >= 0):
            continue
        cur = preds[pick]
        if c.saved != cur.saved:
            if c.saved > cur.saved:
                pick = i
        elif c.outstanding < cur.outstanding or (c.outstanding == cur.outstanding and better(c, cur)):
            pick = i
    return pick


@dataclass
class SloPredict:
    """The policy's choice with its per-poll placements (requests with their own SLOs)."""

    order: str = "deadline"
    margin: float = 0.2
    placed: dict = field(default_factory=dict)  # instance id -> [Pending] placed this poll

    def new_poll(self) -> None:
        self.placed = {}

    def choose(self, r, now: float, views) -> int:
        preds, index = [], []
        for i, v in enumerate(views):
            if not v.accepting:
                continue
            cached = v.cached_prefix_tokens(r) if len(r.prefix) else 0
            preds.append(predict(v, r, cached, now, self.placed.get(v.id, ()), self.order))
            index.append(i)
        k = choose_placement(preds, now, self.margin)
        pick = index[k] if k >= 0 else -1
        if pick >= 0:
            best = preds[k]
            v = views[pick]
            own = max(1, r.prompt_len - best.cached)
            m = Model(v.model)
            self.placed.setdefault(v.id, []).append(
                Pending(_deadline(r, 1), own, m.prefill(own, best.cached), r.prompt_len)
            )
        return pick
