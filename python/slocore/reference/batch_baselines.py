"""Reference for csrc/slocore/batch/plan_builder.h and
csrc/slocore/baselines/{schedulers,fair_schedulers}.h (sarathi_fcfs,
edf, weighted_vtc, mlfq).

A view here is the C++ InstanceView (read-only), so the reference and the C++ see the same
input; plans are lists of (request id, tokens) plus preempted ids.
"""

from __future__ import annotations


def blocks_for(v, tokens: int) -> int:
    return (tokens + v.block_size - 1) // v.block_size


def blocks_needed(v, s, k: int, running: bool) -> int:
    """Free KV blocks taken to compute k more tokens of s (InstanceView::blocks_needed): a
    running request holds its own blocks; a waiting one holds none, and its `shared` cached
    ones are in use already."""
    return blocks_for(v, s.computed + k) - (blocks_for(v, s.computed) if running else s.shared // v.block_size)


def in_prefill(s) -> bool:
    return s.generated == 0 or s.to_compute > 1


class PlanBuilder:
    def __init__(self, v, token_budget: int):
        self.v, self.budget, self.blocks = v, min(token_budget, v.max_batch_tokens), v.kv_blocks_free
        self.items, self.preempted, self.ids = [], [], set()

    def needed(self, s, k, running):
        return blocks_needed(self.v, s, k, running)

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
            # Largest chunk whose blocks fit: the tokens left in held blocks plus whole free blocks.
            held = blocks_for(self.v, s.computed) * self.v.block_size if running else s.shared
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
        self.blocks += blocks_for(self.v, s.computed) - s.shared // self.v.block_size  # shared blocks stay in use
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


def plan_in_order(b: PlanBuilder, order, victims):
    """order: (state, running, index) candidates; see plan_in_order in plan_builder.h."""
    for s, running, i in order:
        if b.seq_full() or b.budget <= 0:
            break
        if s.request.id in b.ids:
            continue
        if running:
            run_with_preemption(b, [i], victims)
        else:
            b.add_next(s, False, True)
    ensure_progress(b)


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
    plan_in_order(b, [c[1:] for c in cands], [c[3] for c in cands if c[2]])
    return b.items, b.preempted


class WeightedVtc:
    """weighted_vtc: Virtual Token Counter over priority classes (OSDI'24), weighted."""

    def __init__(self, token_budget=512, w_in=1.0, w_out=2.0):
        self.budget, self.w_in, self.w_out = token_budget, w_in, w_out
        self.counter: dict[int, float] = {}
        self.active: set[int] = set()

    def charge(self, s, k):
        w = self.w_in if in_prefill(s) else self.w_out
        c = s.request.priority
        self.counter[c] = self.counter.get(c, 0.0) + w * k / s.request.priority_weight

    def schedule(self, v):
        active = {s.request.priority for s in list(v.running) + list(v.waiting)}
        kept = [self.counter.get(c, 0.0) for c in active if c in self.active]
        if kept:  # counter lift for clients that just became active
            for c in active - self.active:
                self.counter[c] = max(self.counter.get(c, 0.0), min(kept))
        self.active = active
        b = PlanBuilder(v, self.budget)
        run = v.running
        run_with_preemption(b, [i for i, s in enumerate(run) if not in_prefill(s)], range(len(run)))
        for s in run:
            if in_prefill(s) and s.request.id not in b.ids:
                b.add_next(s, True, True)
        queues: dict[int, list] = {}
        for s in v.waiting:
            queues.setdefault(s.request.priority, []).append(s)
        while b.budget > 0 and not b.seq_full():
            open_ = [c for c in sorted(queues) if queues[c]]
            if not open_:
                break
            best = min(open_, key=lambda c: self.counter.get(c, 0.0))  # first minimum, like C++
            s = queues[best][0]
            k = b.add_next(s, False, True)
            if k == 0:
                break
            self.charge(s, k)
            queues[best].pop(0)
        ensure_progress(b)
        by_id = {s.request.id: s for s in run}
        for rid, k in b.items:
            if rid in by_id:
                self.charge(by_id[rid], k)
        return b.items, b.preempted


class Mlfq:
    """mlfq: FastServe skip-join MLFQ with a starvation guard."""

    def __init__(self, levels=6, base_quantum_s=0.02, promote_after_s=2.0):
        self.levels, self.q0, self.promote = levels, base_quantum_s, promote_after_s
        self.state: dict[int, list] = {}  # id -> [level, served, last_run]

    def quantum(self, level):
        return self.q0 * 2.0**level

    def state_of(self, s, v, now):
        st = self.state.get(s.request.id)
        if st is None:
            first = v.model.prefill_cost(s.request.prompt_len, 0)
            st = [0, 0.0, min(now, s.request.arrival)]
            while st[0] + 1 < self.levels and self.quantum(st[0]) < first:
                st[0] += 1
            self.state[s.request.id] = st
        if now - st[2] > self.promote:
            st[:] = [0, 0.0, now]
        return st

    def finished(self, rid):
        self.state.pop(rid, None)

    def schedule(self, v, now):
        c = [(self.state_of(s, v, now)[0], s.request.arrival, s, True, i) for i, s in enumerate(v.running)]
        c += [(self.state_of(s, v, now)[0], s.request.arrival, s, False, i) for i, s in enumerate(v.waiting)]
        c.sort(key=lambda x: (x[0], x[1]))
        b = PlanBuilder(v, v.max_batch_tokens)
        plan_in_order(b, [x[2:] for x in c], [x[4] for x in c if x[3]])
        if len(self.state) > 2 * len(c) + 64:
            self.state = {x[2].request.id: self.state[x[2].request.id] for x in c}
        by_id = {s.request.id: s for s in list(v.running) + list(v.waiting)}
        for rid, k in b.items:
            s, st = by_id[rid], self.state[rid]
            st[1] += v.model.prefill_cost(k, s.computed) if in_prefill(s) else v.model.decode_cost(s.computed)
            st[2] = now
            if st[1] >= self.quantum(st[0]) and st[0] + 1 < self.levels:
                st[0] += 1
                st[1] = 0.0
        return b.items, b.preempted
