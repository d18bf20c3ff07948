"""Reference for csrc/include/slocore/batch/{plan_builder,baselines}.h (sarathi_fcfs, edf).

A view here is the C++ InstanceView (read-only), so the reference and the C++ see the same
input; plans are lists of (request id, tokens) plus preempted ids.
"""
from __future__ import annotations


def blocks_for(v, tokens: int) -> int:
    return (tokens + v.block_size - 1) // v.block_size


def in_prefill(s) -> bool:
    return s.generated == 0 or s.to_compute > 1


class PlanBuilder:
    def __init__(self, v, token_budget: int):
        self.v, self.budget, self.blocks = v, min(token_budget, v.max_batch_tokens), v.kv_blocks_free
        self.items, self.preempted, self.ids = [], [], set()

    def needed(self, s, k, running):
        return blocks_for(self.v, s.computed + k) - (blocks_for(self.v, s.computed) if running else 0)

    def seq_full(self):
        return len(self.items) >= self.v.max_num_seqs

    def add(self, s, running, want, partial):
        if self.seq_full() or self.budget <= 0:
            return 0
        k = min(want, s.to_compute)
        if k > self.budget:
            if not partial:
                return 0
            k = self.budget
        while k > 0 and self.needed(s, k, running) > self.blocks:
            if not partial:
                return 0
            held = blocks_for(self.v, s.computed) * self.v.block_size if running else 0
            k = min(k - 1, held + self.blocks * self.v.block_size - s.computed)
        if k <= 0:
            return 0
        self.blocks -= self.needed(s, k, running)
        self.budget -= k
        self.items.append((s.request.id, k))
        self.ids.add(s.request.id)
        return k

    def add_next(self, s, running, partial):
        return self.add(s, running, s.to_compute if in_prefill(s) else 1, partial)

    def preempt(self, s):
        self.blocks += blocks_for(self.v, s.computed)
        self.preempted.append(s.request.id)
        self.ids.add(s.request.id)


def run_with_preemption(b: PlanBuilder, order, victims):
    run, victims = b.v.running, list(victims)
    for i in order:
        s = run[i]
        if s.request.id in b.ids:
            continue
        while b.add_next(s, True, True) == 0 and not b.seq_full() and b.budget > 0:
            while victims and run[victims[-1]].request.id in b.ids:
                victims.pop()
            if not victims:
                break
            if victims[-1] == i:
                b.preempt(s)
                victims.pop()
                break
            b.preempt(run[victims.pop()])


def ensure_progress(b: PlanBuilder):
    if not b.items and b.v.running:
        run_with_preemption(b, [0], range(len(b.v.running)))


def sarathi_fcfs(v, token_budget=512):
    b = PlanBuilder(v, token_budget)
    run = v.running
    run_with_preemption(b, [i for i, s in enumerate(run) if not in_prefill(s)], range(len(run)))
    pre = [(s, True) for s in run if in_prefill(s) and s.request.id not in b.ids] + [(s, False) for s in v.waiting]
    for s, running in pre:
        if b.budget <= 0 or b.seq_full():
            break
        b.add_next(s, running, True)
    ensure_progress(b)
    return b.items, b.preempted


def next_deadline(s) -> float:
    r = s.request
    return r.arrival + r.slo.ttft + s.generated * r.slo.tpot


def edf(v, token_budget=512):
    b = PlanBuilder(v, token_budget)
    cands = [(next_deadline(s), s, True, i) for i, s in enumerate(v.running)]
    cands += [(next_deadline(s), s, False, i) for i, s in enumerate(v.waiting)]
    cands.sort(key=lambda c: c[0])  # stable, like std::stable_sort
    victims = [c[3] for c in cands if c[2]]
    for _, s, running, i in cands:
        if b.seq_full() or b.budget <= 0:
            break
        if s.request.id in b.ids:
            continue
        if running:
            run_with_preemption(b, [i], victims)
        else:
            b.add_next(s, running, True)
    ensure_progress(b)
    return b.items, b.preempted
