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

r's cached prefix on v: v's view (`InstanceView.cached_prefix_tokens`), or, if longer, the
prompt blocks of the unfinished requests placed on v (`SloPredict.inflight`, released by
`finished`).

`Held` is the policy with `hold`: requests wait in the router, leave by first-token deadline
(those that would be late where they would go: after every on-time one, in arrival order), each
to the best instance whose predicted prefill backlog is under one full iteration plus the
prefill time r's cached prefix saves there; among those, one whose cache saves more, where r
is on time with the margin to spare, counts as equal to the best. A request whose cache saves
more on an instance with no room, where it is on time with the margin to spare, waits for it
(its prefill reserved there for the rest of the poll) while the instance it would go to has
prefill queued.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from slocore.reference import prefix as pref
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


def choose_placement(preds: list, now: float, margin: float, slack_for_cache: bool = False) -> int:
    """The best by `better`, unless a candidate within `margin` of its predicted first token (or,
    with `slack_for_cache`, saving more prefill than it with normalised slack >= margin; same
    loss, on time when the best is) saves more prefill time by its cached prefix or, saving the
    same, has fewer outstanding requests."""
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
        equal = c.finish <= bound or (slack_for_cache and c.saved > b.saved and c.slack >= margin)
        if c.loss != b.loss or not equal or (b.slack >= 0 and not c.slack >= 0):
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
    inflight: dict = field(default_factory=dict)  # instance id -> {block hash: unfinished requests placed there}
    where: dict = field(default_factory=dict)  # request id -> (instance id, its prompt's block chain there)

    def new_poll(self) -> None:
        self.placed = {}

    def cached(self, r, v) -> int:
        """r's prompt tokens cached on v: v's view, or the unfinished prompts placed there if longer."""
        if not len(r.prefix):
            return 0
        chain = pref.prompt_block_hashes(r.prompt_len, r.prefix, v.block_size)
        return max(v.cached_prefix_tokens(r), pref.leading(chain, self.inflight.get(v.id, {})) * v.block_size)

    def best(self, r, now: float, views, room=None):
        """((index into views, its prediction), (the cache target, its prediction)), each
        (-1, None) when there is none. The choice is among the accepting instances, and with
        `room` (per view: one iteration minus the prefill backlog, s) those where room plus the
        prefill time r's cached prefix saves is positive. The cache target, among all accepting
        instances: the one whose cached prefix saves r the most, more than at the choice, where r
        is on time with the margin to spare and makes no more first tokens late."""
        preds, index = [], []
        for i, v in enumerate(views):
            if v.accepting:
                preds.append(predict(v, r, self.cached(r, v), now, self.placed.get(v.id, ()), self.order))
                index.append(i)
        every = list(zip(index, preds))
        if room is not None:
            keep = [n for n in range(len(preds)) if room[index[n]] + preds[n].saved > 0]
            preds, index = [preds[n] for n in keep], [index[n] for n in keep]
        k = choose_placement(preds, now, self.margin, slack_for_cache=room is not None)
        if k < 0:
            return (-1, None), (-1, None)
        b = preds[k]
        target = (-1, None)
        for i, x in every:
            if not (x.saved > b.saved and x.slack >= self.margin and x.loss <= b.loss):
                continue
            t = target[1]
            if t is None or x.saved > t.saved or (x.saved == t.saved and better(x, t)):
                target = (i, x)
        return (index[k], b), target

    def reserve(self, r, v, cached: int) -> None:
        own = max(1, r.prompt_len - cached)
        m = Model(v.model)
        self.placed.setdefault(v.id, []).append(Pending(_deadline(r, 1), own, m.prefill(own, cached), r.prompt_len))

    def place(self, r, v, cached: int) -> None:
        self.reserve(r, v, cached)
        self.finished(r.id)  # a retry
        if len(r.prefix):
            chain = pref.prompt_block_hashes(r.prompt_len, r.prefix, v.block_size)
            self.where[r.id] = (v.id, chain)
            held = self.inflight.setdefault(v.id, {})
            for h in chain:
                held[h] = held.get(h, 0) + 1

    def finished(self, rid) -> None:
        """r ended (finished or cancelled): its blocks are the engine's to keep or evict."""
        if rid not in self.where:
            return
        iid, chain = self.where.pop(rid)
        held = self.inflight[iid]
        for h in chain:
            held[h] -= 1
            if held[h] <= 0:
                del held[h]
        if not held:
            del self.inflight[iid]

    def choose(self, r, now: float, views) -> int:
        (pick, best), _ = self.best(r, now, views)
        if pick >= 0:
            self.place(r, views[pick], best.cached)
        return pick


def prefill_backlog(v, extra, now: float) -> float:
    """Seconds until v has computed every pending prefill (running, waiting, `extra`), in full
    iterations of at most max_batch_tokens prefill tokens."""
    m = Model(v.model)
    per_iter, cost, tokens = m.overhead(), 0.0, 0
    for s in v.running:
        if s.in_prefill:
            cost += m.prefill(s.to_compute, s.computed)
            tokens += s.to_compute
        elif not _is_prefill_role(v):
            per_iter += m.decode(s.context_len)
    for s in v.waiting:
        cost += m.prefill(s.to_compute, s.computed)
        tokens += s.to_compute
    for x in extra:
        cost += x.cost
        tokens += x.tokens
    budget = max(1, v.max_batch_tokens)
    return max(0.0, v.busy_until - now) + cost + float((tokens + budget - 1) // budget) * per_iter


def iteration_time(v) -> float:
    """One full iteration on v: the fixed cost, max_batch_tokens of prefill, v's running decodes."""
    m = Model(v.model)
    t = m.overhead() + m.prefill(max(1, v.max_batch_tokens), 0)
    if not _is_prefill_role(v):
        for s in v.running:
            if not s.in_prefill:
                t += m.decode(s.context_len)
    return t


@dataclass
class Held:
    """slo_predict with `hold`: submit() keeps r; poll() returns [(request id, instance id)]."""

    order: str = "fifo"
    margin: float = 0.2
    held: list = field(default_factory=list)  # (first-token deadline, arrival seq, request)
    hopeless: list = field(default_factory=list)  # (arrival seq, request)
    seq: int = 0
    sp: SloPredict | None = None

    def submit(self, r) -> None:
        self.held.append((_deadline(r, 1), self.seq, r))
        self.seq += 1

    def poll(self, now: float, views) -> list:
        if self.sp is None:
            self.sp = SloPredict(order=self.order, margin=self.margin)
        sp = self.sp
        sp.new_poll()

        def room_of(v):  # one iteration minus the backlog, s
            return iteration_time(v) - prefill_backlog(v, sp.placed.get(v.id, ()), now) if v.accepting else -INF

        def queued(v):  # prefill to run in its next iteration
            return bool(v.waiting) or bool(sp.placed.get(v.id)) or any(x.in_prefill for x in v.running)

        room = [room_of(v) for v in views]
        out, waiting = [], []  # waiting: on time where their cache is, no room there yet
        while True:
            on_time = [x for x in self.held if x not in waiting]
            if on_time:
                d, k, r = min(on_time, key=lambda x: (x[0], x[1]))
            elif self.hopeless:
                k, r = min(self.hopeless, key=lambda x: x[0])
            else:
                break
            (pick, best), (j, want) = sp.best(r, now, views, room)
            if pick < 0:  # no room for r: it and everything behind it wait
                break
            if on_time and j >= 0 and not room[j] + want.saved > 0 and queued(views[pick]):
                sp.reserve(r, views[j], want.cached)  # r waits for its cache, reserved there
                room[j] = room_of(views[j])
                waiting.append((d, k, r))
                continue
            if on_time and best.finish > d:  # late even where it would go now
                self.held.remove((d, k, r))
                self.hopeless.append((k, r))
                continue
            sp.place(r, views[pick], best.cached)
            if on_time:
                self.held.remove((d, k, r))
            else:
                self.hopeless.remove((k, r))
            out.append((r.id, views[pick].id))
            room[pick] = room_of(views[pick])
        return out
