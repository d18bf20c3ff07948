"""Reference for csrc/slocore/proserve/{tdg,slide_batching,goroute}.h.

ProServe: TDG token deadlines and weights (Eq. 3), SlideBatching
(Alg. 1 with phi_a Eq. 8, phi_c Eq. 9, phi_p) and GoRouting's instance choice (Alg. 2).
The view is the C++ InstanceView (read-only); its latency model is copied into plain floats
so the benchmark measures Python against C++.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from slocore.reference.batch_baselines import PlanBuilder, ensure_progress, in_prefill, run_with_preemption

INF = math.inf


def token_deadline(r, i: int) -> float:  # Eq. 3
    return r.arrival + r.slo.ttft + (i - 1) * r.slo.tpot


def token_weight(r, i: int, w_prefill=1.0, w_decode=1.0) -> float:  # Eq. 3, w_r(i)
    return r.priority_weight * (w_prefill if i == 1 else w_decode)


class Model:
    """Eq. 5-7 with the correction beta, in the C++ operation order."""

    def __init__(self, m):
        c = m.coeffs
        self.beta, self.t_c, self.a_p, self.b_p, self.c_p, self.a_d, self.b_d = (
            m.correction,
            c.t_c,
            c.a_p,
            c.b_p,
            c.c_p,
            c.a_d,
            c.b_d,
        )

    def prefill(self, q, kv):
        return self.beta * (self.a_p * q * q + self.b_p * q * kv + self.c_p * q)

    def decode(self, kv):
        return self.beta * (self.a_d * kv + self.b_d)

    def overhead(self):
        return self.beta * self.t_c


def max_chunk(m: Model, s, left: float) -> int:  # GETMAXCHUNK
    n = s.to_compute
    if left <= 0 or n <= 0:
        return 0
    if m.prefill(n, s.computed) <= left:
        return n
    a, b = m.beta * m.a_p, m.beta * (m.b_p * s.computed + m.c_p)
    k = (-b + math.sqrt(b * b + 4 * a * left)) / (2 * a) if a > 0 else (left / b if b > 0 else n)
    q = min(max(int(math.floor(k)), 0), n)
    while q > 0 and m.prefill(q, s.computed) > left:
        q -= 1
    while q < n and m.prefill(q + 1, s.computed) <= left:
        q += 1
    return q


@dataclass
class SlideParams:
    phi: str = "a"
    gamma: float = 1.0
    eta: float = 0.05
    w_prefill: float = 1.0
    w_decode: float = 1.0
    order: str = "slide"
    latency_aware: bool = True
    token_budget: int = 512


def slide_order(v, now: float, p: SlideParams, m: Model):
    """Alg. 1 lines 1-13: [(state, running, index, exec, remain, density, urgent)] sorted, t_budget."""
    q, t_min, total = [], INF, 0.0
    for running, lst in ((True, v.running), (False, v.waiting)):
        for i, s in enumerate(lst):
            ex = max(m.prefill(s.to_compute, s.computed) if in_prefill(s) else m.decode(s.computed), 1e-12)
            nxt = s.generated + 1
            remain = token_deadline(s.request, nxt) - now
            dens = token_weight(s.request, nxt, p.w_prefill, p.w_decode) / ex
            if remain > 0:
                t_min = min(t_min, remain)
            total += ex
            q.append([s, running, i, ex, remain, dens, False])
    budget = max(t_min, p.eta)
    tc = m.overhead()
    steps = budget / (budget - tc) if budget > tc else INF
    if p.phi == "a":
        phi = [steps * total] * len(q)
    elif p.phi == "p":
        phi = [total + len(q) * tc] * len(q)
    else:
        phi, acc = [0.0] * len(q), 0.0
        for i in sorted(range(len(q)), key=lambda i: q[i][4]):
            acc += q[i][3]
            phi[i] = steps * acc
    for i, c in enumerate(q):
        c[6] = p.order == "density" or (p.order == "slide" and c[4] < p.gamma * phi[i])
    q.sort(key=lambda c: (not c[6], -c[5] if c[6] else c[4]))
    return q, budget


def slide_batching(v, now: float, p: SlideParams | None = None):
    """Alg. 1: the plan as ([(id, tokens)], [preempted ids])."""
    p = p or SlideParams()
    m = Model(v.model)
    q, budget = slide_order(v, now, p, m)
    limit = budget if p.latency_aware else INF
    b = PlanBuilder(v, v.max_batch_tokens if p.latency_aware else p.token_budget)
    victims = [c[2] for c in q if c[1]]
    t_batch = m.overhead()
    for s, running, i, ex, _, _, _ in q:
        if (b.items and t_batch >= limit) or b.seq_full() or b.budget <= 0:
            break
        if s.request.id in b.ids:
            continue
        if not in_prefill(s):
            before = len(b.items)
            if running:
                run_with_preemption(b, [i], victims)
            else:
                b.add(s, False, 1, False)
            if len(b.items) > before and s.request.id in b.ids:
                t_batch += ex
            continue
        k = max_chunk(m, s, limit - t_batch)
        if k == 0 and not b.items:
            k = max(max_chunk(m, s, p.eta), 1)
        if k == 0:
            continue
        got = b.add(s, running, k, True)
        if got > 0:
            t_batch += m.prefill(got, s.computed)
    ensure_progress(b)
    return b.items, b.preempted


# --- GoRouting (Alg. 2) --------------------------------------------------------------------


@dataclass
class GoRouteParams:
    mode: str = "colocated"
    alpha: float = 0.9
    mu: float = 0.25
    lam: float = 0.75
    w_prefill: float = 1.0
    fallback: str = "min_exec"
    compensate: bool = True
    gain_phi: str = "a"


class RouteQueue:
    def __init__(self):
        self.queue, self.ts, self.n_d = [], 0.0, 0


def _elapsed(p, q, now):
    return max(0.0, now - q.ts) if p.compensate and q.queue else 0.0


def _dl(r):
    return r.arrival + r.slo.ttft


def _colocated_factor(q, m, extra, req, now):
    tb = req.slo.tpot
    for r in q.queue + ([extra] if extra is not None else []):
        if _dl(r) - now > 0:  # a request past its TTFT does not shrink the budget
            tb = min(tb, _dl(r) - now)
    tb = max(tb, 1e-3)
    if math.isinf(tb):
        return 1.0
    room = tb - m.overhead() - q.n_d * m.decode(req.prompt_len)
    return tb / room if room > 0 else INF


def estimate_exec(p: GoRouteParams, q: RouteQueue, m: Model, extra, req, now) -> float:
    reqs = q.queue + ([extra] if extra is not None else [])
    work = 0.0
    for r in reqs:
        work += m.prefill(r.prompt_len, 0)
    if p.mode == "colocated":
        f = _colocated_factor(q, m, extra, req, now)
        t = 0.0 if not reqs else (INF if f == INF else f * work)
    else:
        t = work + len(reqs) * m.overhead()
    return max(0.0, t - _elapsed(p, q, now))


def estimate_gain(p: GoRouteParams, q: RouteQueue, m: Model, extra, req, now) -> float:
    w = p.w_prefill
    if p.mode == "colocated" and p.gain_phi == "c":
        f = _colocated_factor(q, m, extra, req, now)
        t, g = now - _elapsed(p, q, now), 0.0
        for r in sorted(q.queue + ([extra] if extra is not None else []), key=_dl):
            t += f * m.prefill(r.prompt_len, 0)
            if max(t, now) < _dl(r):
                g += r.priority_weight * w
        return g
    if p.mode == "colocated":
        done = now + estimate_exec(p, q, m, extra, req, now)
        g = sum(r.priority_weight * w for r in q.queue if done < _dl(r))
        if extra is not None and done < _dl(extra):
            g += extra.priority_weight * w
        return g
    t, g = now - _elapsed(p, q, now), 0.0
    for r in sorted(q.queue + ([extra] if extra is not None else []), key=_dl):
        t += m.prefill(r.prompt_len, 0) + m.overhead()
        if max(t, now) < _dl(r):
            g += r.priority_weight * w
    return g


class GoRoute:
    """Alg. 2 over PrefillQueueMap; `choose` returns the index into `views` (push policy)."""

    def __init__(self, p: GoRouteParams | None = None):
        self.p, self.queues, self.decoding = p or GoRouteParams(), {}, set()

    def choose(self, r, now, views):
        p = self.p
        ok = [i for i, v in enumerate(views) if v.accepting]
        if not ok:
            return -1
        if p.mode == "decode":
            return max(ok, key=lambda i: (views[i].kv_blocks_free, -i))
        delta, e0, e1 = [], [], []
        for i in ok:
            v = views[i]
            q = self.queues.get(v.id, RouteQueue())
            m = Model(v.model)
            delta.append(estimate_gain(p, q, m, r, r, now) - estimate_gain(p, q, m, None, r, now))
            e0.append(estimate_exec(p, q, m, None, r, now))
            e1.append(estimate_exec(p, q, m, r, r, now))
        dmax = max(delta)

        def best(ks, key, want_max):
            b = ks[0]
            for k in ks:
                if (key[k] > key[b]) if want_max else (key[k] < key[b]):
                    b = k
            return b

        if dmax > 0:
            C = [k for k in range(len(ok)) if delta[k] >= p.alpha * dmax]
            L = [k for k in C if e0[k] < p.mu * r.slo.ttft]
            CmH = [k for k in C if not e1[k] > p.lam * r.slo.ttft]
            k = best(L, e0, False) if L else best(CmH, e0, True) if CmH else best(C, e0, False)
        else:
            k = best(list(range(len(ok))), e0, False)
        i = ok[k]
        q = self.queues.setdefault(views[i].id, RouteQueue())
        q.queue.append(r)
        q.ts = now
        return i

    def first_token(self, rid, inst, now):
        q = self.queues.get(inst)
        if q is None:
            return
        for j, r in enumerate(q.queue):
            if r.id == rid:
                del q.queue[j]
                q.ts = now
                if self.p.mode == "colocated":
                    q.n_d += 1
                    self.decoding.add(rid)
                return

    def finished(self, rid, inst, now):
        self.first_token(rid, inst, now)
        if rid in self.decoding:
            self.decoding.discard(rid)
            q = self.queues.get(inst)
            if q is not None:
                q.n_d = max(0, q.n_d - 1)
