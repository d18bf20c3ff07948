"""Reference for csrc/slocore/baselines/vllm_priority.h: vLLM V1's scheduler with
`--scheduling-policy priority` (running pass with lowest-priority preemption, then waiting
by (priority, arrival) when nothing was preempted)."""

from __future__ import annotations

from slocore.reference.batch_baselines import PlanBuilder, ensure_progress, in_prefill


def running_pass(b, run, order, victims, on_turn=None, want=None) -> bool:
    """The running pass over `run` in `order`, preempting from the end of `victims` (not yet
    planned); `on_turn(i, tokens)` after request i's turn; `want(i)`: the tokens request i asks
    for (0: it sits the pass out; default one decode token or the whole remaining prefill).
    Whether anything was preempted."""
    preempted = False
    for i in order:
        s = run[i]
        if s.request.id in b.ids:
            continue
        if b.budget <= 0 or b.seq_full():
            break
        before = b.budget
        w = want(i) if want is not None else (s.to_compute if in_prefill(s) else 1)
        if w <= 0:
            continue
        stop = False
        while b.add(s, True, w, True) == 0:
            while victims and run[victims[-1]].request.id in b.ids:
                victims.pop()
            if not victims:
                stop = True
                break
            victim = victims.pop()
            b.preempt(run[victim])
            preempted = True
            if victim == i:
                stop = True
                break
        if on_turn is not None:
            on_turn(i, before - b.budget)
        if stop:
            break
    return preempted


def vllm_priority(v, token_budget: int = 0):
    b = PlanBuilder(v, token_budget if token_budget > 0 else v.max_batch_tokens)
    run = v.running

    def key(s):
        return (s.request.priority, s.request.arrival)

    victims = sorted(range(len(run)), key=lambda i: key(run[i]))
    preempted = running_pass(b, run, range(len(run)), victims)
    if not preempted:
        for s in sorted(v.waiting, key=key):
            if b.budget <= 0 or b.seq_full() or b.add_next(s, False, True) == 0:
                break
    ensure_progress(b)
    return b.items, b.preempted
