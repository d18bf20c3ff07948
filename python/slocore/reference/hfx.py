"""Pure-Python reference for the HFX hot paths (csrc/slocore/hfx/): the Alg. 1
dispatcher in its three stages (colocated, P-stage dispatcher, D-stage migrator), the Eq. 5
token budget, calculate_p, the maturity update, and the Alg. 2 / Eq. 6 priority mapper.
Test oracle and the baseline the benchmark measures the C++ against. Same decisions, same
order; floats agree to rounding.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

from slocore.reference.latency import Coeffs, LatencyModel
from slocore.roles import ROLES

INF = math.inf


# --- plain views (pure Python copies of InstanceView / RequestState) -----------------------
@dataclass
class Req:
    id: int
    arrival: float
    prompt_len: int
    ttft: float = INF
    tpot: float = INF
    priority: int = 0


@dataclass
class State:
    request: Req
    computed: int = 0
    generated: int = 0

    @property
    def num_tokens(self):
        return self.request.prompt_len + self.generated

    @property
    def to_compute(self):
        return self.num_tokens - self.computed

    @property
    def in_prefill(self):
        return self.generated == 0 or self.to_compute > 1


@dataclass
class View:
    id: int
    model: LatencyModel
    running: list = field(default_factory=list)
    waiting: list = field(default_factory=list)
    accepting: bool = True
    kv_blocks_total: int = 0
    kv_blocks_free: int = 0
    block_size: int = 16
    busy_until: float = 0.0
    max_batch_tokens: int = 8192

    @property
    def kv_utilization(self):
        return 1.0 - self.kv_blocks_free / self.kv_blocks_total if self.kv_blocks_total > 0 else 0.0

    def blocks_for(self, tokens):
        return (tokens + self.block_size - 1) // self.block_size


def req_of(r) -> Req:
    return Req(r.id, r.arrival, r.prompt_len, r.slo.ttft, r.slo.tpot, r.priority)


def view_of(v) -> View:
    """A pure-Python copy of a bound InstanceView (belief model, queues, KV)."""
    c = v.model.coeffs
    m = LatencyModel(Coeffs(c.t_c, c.a_p, c.b_p, c.c_p, c.a_d, c.b_d), beta=v.model.correction)
    st = lambda s: State(req_of(s.request), s.computed, s.generated)  # noqa: E731
    return View(
        v.id,
        m,
        [st(s) for s in v.running],
        [st(s) for s in v.waiting],
        v.accepting,
        v.kv_blocks_total,
        v.kv_blocks_free,
        v.block_size,
        v.busy_until,
        v.max_batch_tokens,
    )


# --- formulas --------------------------------------------------------------------------------
def token_budget(ttft, tpot, e_d, a, b):
    """Eq. 5 / appendix B."""
    if not (math.isfinite(ttft) and math.isfinite(tpot)) or b <= 0:
        return INF
    return (ttft * tpot - ttft * e_d - a * tpot) / (b * tpot)


def admission_p(arrival, ttft, prefill_s, now, util, util_exp):
    """Alg. 1 calculate_p as docs/design.md fixes it (slack and utilisation)."""
    if not math.isfinite(ttft):
        return 1.0
    slack = arrival + ttft - (now + prefill_s)
    p = min(max(slack / ttft, 0.0), 1.0)
    if util_exp > 0:
        p *= min(max(1.0 - util, 0.0), 1.0) ** util_exp
    return p


def maturity_time(now, e_p, e_d, min_tpot):
    relax = min_tpot - e_d
    if not relax > 0:
        return now + e_p + e_d
    if not math.isfinite(relax):
        return now + e_p
    return now + e_p + (e_p / relax) * e_d


@dataclass
class Load:
    min_ttft: float = INF
    min_tpot: float = INF
    decode_ctx: float = 0.0
    decode_batch: float = 0.0
    prefill_tokens: float = 0.0
    prefill_sq: float = 0.0
    all_ctx: float = 0.0
    all_batch: float = 0.0
    kv_free_tokens: float = 0.0
    idle: bool = True


def instance_load(v: View) -> Load:
    L, waiting_blocks = Load(), 0
    for running, q in ((True, v.running), (False, v.waiting)):
        for s in q:
            L.idle = False
            L.min_ttft = min(L.min_ttft, s.request.ttft)
            L.min_tpot = min(L.min_tpot, s.request.tpot)
            cur = float(s.num_tokens)
            L.all_ctx += cur
            L.all_batch += 1
            if s.in_prefill:
                k = float(s.to_compute)
                L.prefill_tokens += k
                L.prefill_sq += k * k
            else:
                L.decode_ctx += cur
                L.decode_batch += 1
            if not running:
                waiting_blocks += v.blocks_for(s.num_tokens)
    L.kv_free_tokens = float(max(v.kv_blocks_free - waiting_blocks, 0) * v.block_size)
    return L


# --- Alg. 1 dispatcher --------------------------------------------------------------------------
class Dispatcher:
    """Mirror of slocore::hfx::Dispatcher. The queue is a sorted list of (slo, arrival, id)."""

    def __init__(
        self,
        stage="colocated",
        theta=0.0,
        util_exp=0.0,
        monitor_interval=1.0,
        best_effort=True,
        tight_window=0.0,
        dispatch_cap=1.0,
    ):
        if stage not in ROLES:
            raise ValueError(f"hfx.stage: must be colocated, prefill or decode, got {stage!r}")
        self.stage, self.theta, self.util_exp = stage, theta, util_exp
        self.monitor_interval, self.best_effort, self.tight_window = monitor_interval, best_effort, tight_window
        self.dispatch_cap = dispatch_cap
        self.queue: list[tuple] = []
        self.reqs: dict[int, Req] = {}
        self.maturity: dict[int, float] = {}
        self.budget: dict[int, float] = {}
        self.next_monitor = 0.0
        self.recent: deque = deque()  # (time, ttft, tpot), pruned by tight_window

    def key(self, r: Req):
        return (r.ttft if self.stage == "prefill" else r.tpot, r.arrival, r.id)

    def submit(self, r: Req, now: float):
        if r.id in self.reqs:
            raise ValueError(f"request.id: duplicate id {r.id}")
        self.reqs[r.id] = r
        bisect.insort(self.queue, self.key(r))
        if self.tight_window > 0:
            self.recent.append((now, r.ttft, r.tpot))

    def pending(self):
        return len(self.queue)

    def next_wakeup(self):
        if not self.queue or not self.maturity:
            return INF
        return min(min(self.maturity.values()), self.next_monitor)

    def _recent_min(self, now, col):
        while self.recent and self.recent[0][0] < now - self.tight_window:
            self.recent.popleft()
        return min((x[col] for x in self.recent), default=INF)

    def poll(self, now: float, views: list[View]) -> list[tuple[int, int]]:
        live = {v.id for v in views if v.accepting}
        for i in live:
            self.maturity.setdefault(i, now)
        for i in list(self.maturity):
            if i not in live:
                del self.maturity[i]
        if now >= self.next_monitor:
            for v in views:
                if v.accepting and not v.running and not v.waiting and self.maturity[v.id] > now:
                    self.maturity[v.id] = now
            self.next_monitor = now + self.monitor_interval
        out = []
        if not self.queue:
            return out
        by_id = {v.id: v for v in views}
        matured = sorted((t, i) for i, t in self.maturity.items() if t <= now)
        for _, w in matured:
            if not self.queue:
                self.maturity[w] = now
                continue
            L = instance_load(by_id[w])
            taken = self._decode(now, by_id[w], L) if self.stage == "decode" else self._prefill_like(now, by_id[w], L)
            for rid in taken:
                self.queue.remove(self.key(self.reqs[rid]))
                del self.reqs[rid]
                out.append((rid, w))
        return out

    def _prefill_like(self, now, v: View, L: Load):
        m = v.model
        a, b = m.beta * m.c.t_c, m.beta * m.c.c_p
        head = self.reqs[self.queue[0][2]]
        if self.stage == "colocated":
            e_d = m.stage_decode(L.decode_ctx, L.decode_batch) if L.decode_batch > 0 else 0.0
            ttft = min(L.min_ttft, head.ttft, self._recent_min(now, 1) if self.tight_window > 0 else INF)
            tpot = min(L.min_tpot, head.tpot, self._recent_min(now, 2) if self.tight_window > 0 else INF)
            budget = token_budget(ttft, tpot, e_d, a, b)
        else:
            budget = (head.ttft - a) / b if math.isfinite(head.ttft) and b > 0 else INF
        budget -= L.prefill_tokens
        limit = min(budget, L.kv_free_tokens)
        if self.dispatch_cap > 0:
            limit = min(limit, self.dispatch_cap * v.max_batch_tokens)
        self.budget[v.id] = limit
        util = v.kv_utilization
        taken, late, used, s, sq, first_ok = [], [], 0.0, L.prefill_tokens, L.prefill_sq, None
        for _, _, rid in self.queue:
            r = self.reqs[rid]
            l = float(r.prompt_len)
            p = admission_p(r.arrival, r.ttft, m.stage_prefill(l, l * l), now, util, self.util_exp)
            ok = p > 0 and p >= self.theta
            if ok and first_ok is None:
                first_ok = rid
            if limit - used < 1.0:
                if not L.idle or first_ok is not None:
                    break
                continue
            if used + l > limit:
                continue
            if not ok:
                late.append(rid)
                continue
            taken.append(rid)
            used, s, sq = used + l, s + l, sq + l * l
        if self.best_effort:
            for rid in late:
                l = float(self.reqs[rid].prompt_len)
                if used + l > limit:
                    continue
                taken.append(rid)
                used, s, sq = used + l, s + l, sq + l * l
        if not taken and L.idle:
            rid = first_ok if first_ok is not None else self.queue[0][2]
            taken.append(rid)
            l = float(self.reqs[rid].prompt_len)
            s, sq = s + l, sq + l * l
        e_p = m.stage_prefill(s, sq)
        if self.stage == "prefill":
            self.maturity[v.id] = max(now, v.busy_until) + e_p
        else:
            ctx, batch, tpot = L.all_ctx, L.all_batch, L.min_tpot
            for rid in taken:
                r = self.reqs[rid]
                ctx, batch, tpot = ctx + r.prompt_len, batch + 1, min(tpot, r.tpot)
            self.maturity[v.id] = maturity_time(now, e_p, m.stage_decode(ctx, batch), tpot)
        return taken

    def _decode(self, now, v: View, L: Load):
        m = v.model
        ctx, batch, kv_free = L.all_ctx, L.all_batch, L.kv_free_tokens
        tpot = self.reqs[self.queue[0][2]].tpot if L.idle else L.min_tpot
        taken, slots = [], 0.0
        for _, _, rid in self.queue:
            if m.stage_decode(ctx + 1.0, batch + 1.0) > tpot:
                break
            r = self.reqs[rid]
            c = float(r.prompt_len + 1)
            lim = min(tpot, r.tpot)
            if c > kv_free or m.stage_decode(ctx + c, batch + 1.0) > lim:
                continue
            taken.append(rid)
            ctx, batch, tpot, kv_free, slots = ctx + c, batch + 1, lim, kv_free - c, slots + 1
        if not taken and L.idle:
            r = self.reqs[self.queue[0][2]]
            taken.append(r.id)
            ctx, batch = ctx + r.prompt_len + 1, batch + 1
        self.budget[v.id] = slots
        self.maturity[v.id] = max(now, v.busy_until) + m.stage_decode(ctx, batch)
        return taken


# --- Alg. 2 priority mapper -------------------------------------------------------------------
class PriorityMapper:
    def __init__(
        self,
        window=200,
        ttft_base=(0.7, 1.0, 2.0, 20.0),
        tpot_base=(0.5, 0.7, 0.9, 1.0),
        spread=0.25,
        relaxed_min=0.5,
        queue_correction=True,
    ):
        self.window, self.ttft_base, self.tpot_base = window, list(ttft_base), list(tpot_base)
        self.spread, self.relaxed_min, self.queue_correction = spread, relaxed_min, queue_correction
        self.n = len(self.ttft_base)
        self.fifo: deque = deque()
        self.ttft_sorted: list = []
        self.tpot_sorted: list = []
        self.counts = [0] * self.n
        self.last_q: list = [None] * self.n

    def index(self, p):
        if not self.fifo:
            return -1
        base = sum(self.counts[:p])  # Eq. 6
        offset = math.floor((p + 1) / (self.n + 1) * self.counts[p])
        return min(base + offset, len(self.fifo) - 1)

    def map(self, p, higher_pending):
        if not 0 <= p < self.n:
            raise ValueError(f"priority: must be in [0, {self.n - 1}], got {p}")
        ttft, tpot = self.ttft_base[p], self.tpot_base[p]
        i = self.index(p)
        if i >= 0:
            ttft, q = self.ttft_sorted[i]
            tpot = self.tpot_sorted[i]
            if self.queue_correction and self.last_q[p] is not None:
                ttft -= q - self.last_q[p]
        f = 1.0 if higher_pending else self.relaxed_min
        clamp = lambda x, base: min(max(x, base * (1 - self.spread) * f), base * (1 + self.spread))  # noqa: E731
        return clamp(ttft, self.ttft_base[p]), clamp(tpot, self.tpot_base[p])

    def record(self, p, ttft, queue_time, tpot):
        self.fifo.append((p, ttft, queue_time, tpot))
        bisect.insort(self.ttft_sorted, (ttft, queue_time))
        bisect.insort(self.tpot_sorted, tpot)
        self.counts[p] += 1
        if len(self.fifo) > self.window:
            op, ot, oq, otp = self.fifo.popleft()
            self.ttft_sorted.pop(bisect.bisect_left(self.ttft_sorted, (ot, oq)))
            self.tpot_sorted.pop(bisect.bisect_left(self.tpot_sorted, otp))
            self.counts[op] -= 1

    def on_dispatch(self, p, queue_time):
        self.last_q[p] = queue_time
