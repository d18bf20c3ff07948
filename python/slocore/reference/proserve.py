"""Reference for csrc/include/slocore/proserve/{tdg,slide_batching,goroute}.h.

ProServe (003_2674c12c132a39ef.txt): TDG token deadlines and weights (Eq. 3), SlideBatching
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
            m.correction, c.t_c, c.a_p, c.b_p, c.c_p, c.a_d, c.b_d)

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


def slide_batching(v, now: float, p: SlideParams = SlideParams()):
    """Alg. 1: the plan as ([(id, tokens)], [preempted ids])."""
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
