"""Reference for csrc/slocore/stack/slo_triage.h: vLLM's priority scheduler keyed (late,
priority, arrival). Late: past the first-token deadline (ProServe Eq. 3), or predicted past it
with `margin` taken off the predicted wait; preemption takes late ones first; new prefill
tokens are capped to (1 - margin) of the on-time decodes' TPOT (`tpot_guard`); within a
priority level a request predicted late demotes the level's longest feasible waiting request
when that is longer and makes it feasible (Moore-Hodgson, `count_optimal`)."""

from __future__ import annotations

import heapq
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


def _key(s):
    return (s.request.priority, s.request.arrival)


def running_load(v, now: float):
    """Per running request whether it is late; one decode step of the running decodes; the
    feasible running prefill tokens; the tightest TPOT SLO of the on-time decodes."""
    decode_s, ahead, tpot_min = 0.0, 0, math.inf
    run_late = [already_late(s, now) for s in v.running]
    for s, late in zip(v.running, run_late):
        if not in_prefill(s):
            decode_s += v.model.decode_cost(s.computed)
            if not late:
                tpot_min = min(tpot_min, s.request.slo.tpot)
        elif not late:
            ahead += s.to_compute
    return run_late, decode_s, ahead, tpot_min


def split_waiting(v, now: float, budget: int, margin: float, count_optimal: bool):
    """The waiting requests in (priority, arrival) order split into (feasible, late), with
    Moore-Hodgson's demotion within a priority level when `count_optimal`."""
    _, decode_s, ahead, _ = running_load(v, now)
    waiting = sorted(v.waiting, key=_key)
    waiting_late = [False] * len(waiting)
    level = []  # this level's feasible waiting requests as a heap: longest, then newest, first
    for i, s in enumerate(waiting):
        if i > 0 and s.request.priority != waiting[i - 1].request.priority:
            level = []
        late = already_late(s, now)
        if not late and math.isfinite(s.request.slo.ttft):

            def late_behind(work, s=s):
                wait = predicted_prefill_s(v, work + s.to_compute, budget, decode_s)
                return now + (1.0 - margin) * wait >= _deadline(s.request)

            late = late_behind(ahead)
            if late and count_optimal and level:
                tokens, j = -level[0][0], -level[0][1]
                if tokens > s.to_compute and not late_behind(ahead - tokens):
                    heapq.heappop(level)
                    waiting_late[j] = True
                    ahead -= tokens
                    late = False
        waiting_late[i] = late
        if not late:
            ahead += s.to_compute
            heapq.heappush(level, (-s.to_compute, -i))
    return [s for s, late in zip(waiting, waiting_late) if not late], [
        s for s, late in zip(waiting, waiting_late) if late
    ]


def slo_triage(
    v, now: float, token_budget: int = 0, margin: float = 0.2, tpot_guard: bool = True, count_optimal: bool = True
):
    b = PlanBuilder(v, token_budget if token_budget > 0 else v.max_batch_tokens)
    budget = b.budget
    run = v.running
    key = _key
    run_late, decode_s, _, tpot_min = running_load(v, now)
    feasible_waiting, late_waiting = split_waiting(v, now, budget, margin, count_optimal)
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
