"""Reference for csrc/slocore/stack/slo_triage.h: vLLM's priority scheduler keyed (late,
priority, arrival). Late: past the first-token deadline (ProServe Eq. 3), or predicted past it
with `margin` taken off the predicted wait; preemption takes late ones first; new prefill
tokens are capped to (1 - margin) of the on-time decodes' TPOT (`tpot_guard`)."""

from __future__ import annotations

import math

from slocore.reference.batch_baselines import PlanBuilder, ensure_progress, in_prefill
from slocore.reference.vllm_priority import running_pass


def predicted_prefill_s(v, tokens: int, budget: int, decode_s: float) -> float:
    if tokens <= 0:
        return 0.0
    if budget <= 0:
        return math.inf
    full, rest = divmod(tokens, budget)
    t = (full + (1 if rest > 0 else 0)) * (v.model.overhead() + decode_s)
    if full > 0:
        t += full * v.model.prefill_cost(budget, 0)
    if rest > 0:
        t += v.model.prefill_cost(rest, 0)
    return t


def max_prefill_tokens(v, limit_s: float, budget: int) -> int:
    if not (limit_s >= v.model.prefill_cost(1, 0)):
        return 0
    lo, hi = 1, budget
    if v.model.prefill_cost(hi, 0) <= limit_s:
        return hi
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if v.model.prefill_cost(mid, 0) <= limit_s:
            lo = mid
        else:
            hi = mid
    return lo


def _deadline(r) -> float:
    return r.arrival + r.slo.ttft


def already_late(s, now: float) -> bool:
    if s.generated > 0:
        return not (s.first_token < _deadline(s.request))
    return now >= _deadline(s.request)


def slo_triage(v, now: float, token_budget: int = 0, margin: float = 0.2, tpot_guard: bool = True):
    b = PlanBuilder(v, token_budget if token_budget > 0 else v.max_batch_tokens)
    budget = b.budget
    run = v.running

    def key(s):
        return (s.request.priority, s.request.arrival)

    decode_s, ahead, tpot_min = 0.0, 0, math.inf
    run_late = [already_late(s, now) for s in run]
    for s, late in zip(run, run_late):
        if not in_prefill(s):
            decode_s += v.model.decode_cost(s.computed)
            if not late:
                tpot_min = min(tpot_min, s.request.slo.tpot)
        elif not late:
            ahead += s.to_compute
    feasible_waiting, late_waiting = [], []
    for s in sorted(v.waiting, key=key):
        late = already_late(s, now)
        if not late and math.isfinite(s.request.slo.ttft):
            wait = predicted_prefill_s(v, ahead + s.to_compute, budget, decode_s)
            late = now + (1.0 - margin) * wait >= _deadline(s.request)
        (late_waiting if late else feasible_waiting).append(s)
        if not late:
            ahead += s.to_compute
    # vLLM priority keyed (late, priority, arrival): running pass, then waiting if nothing was preempted.
    run_order = [i for i in range(len(run)) if not run_late[i]] + [i for i in range(len(run)) if run_late[i]]
    victims = sorted(range(len(run)), key=lambda i: (run_late[i], key(run[i])))
    prefill = 0

    def on_turn(i, took):
        nonlocal prefill
        if in_prefill(run[i]):
            prefill += took

    preempted = running_pass(b, run, run_order, victims, on_turn)
    if not preempted:
        cap = budget
        if tpot_guard and math.isfinite(tpot_min):
            cap = max_prefill_tokens(v, (1.0 - margin) * tpot_min - v.model.overhead() - decode_s, budget)
        for s in feasible_waiting + late_waiting:
            if b.budget <= 0 or b.seq_full() or prefill >= cap:
                break
            k = b.add(s, False, min(s.to_compute, cap - prefill), True)
            if k == 0:
                break
            prefill += k
    ensure_progress(b)
    return b.items, b.preempted
