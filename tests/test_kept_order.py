"""Engine schedulers that keep their order across calls (mlfq, edf, slide_batching), and slo_triage, whose measured
rates follow the queue's new tail: with an engine's view (an
epoch, changed as sim/engine.cc changes it between calls: the plan's waiting requests join
`running`, preempted ones go back to the queue's front, finished and cancelled ones leave
with on_finished, arrivals are appended) the plans equal the pure-Python reference's, which
recomputes everything each call. With report_changes the loop also tells the scheduler what
changed, as the simulator's engine does (InstanceView.changes), sometimes wrongly: a list
that disagrees with the view must be found out and the view read whole."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import batch_baselines as ref
from slocore.reference import proserve as proserve_ref
from slocore.reference import slo_triage as triage_ref


def _request(rid, arrival, prompt, output, ttft=1.0, priority=0):
    return s.Request(rid, arrival, prompt, output_len=output, ttft=ttft, tpot=0.1, priority=priority)


def _finished(py, rid, now):
    at = getattr(py, "finished_at", None)
    at(rid, now) if at else py.finished(rid)


def engine_loop(
    cpp, py, seed, steps=80, tie_arrivals=False, ttft=1.0, priorities=1, handoff=False, report_changes=False
):
    """Drives cpp and py through one engine's calls; returns how many calls planned something.
    handoff: a P/D decode instance's, whose arrivals come with their prompt computed
    elsewhere and their first token out (in time or not). report_changes: fills
    v.changes as sim/engine.cc does."""
    rng = random.Random(seed)
    v = s.InstanceView(0, s.Role.DECODE if handoff else s.Role.COLOCATED)
    v.block_size, v.max_batch_tokens, v.max_num_seqs = 16, rng.choice([64, 256, 1024]), rng.choice([2, 4, 16])
    total = rng.choice([12, 40, 400])
    if handoff:  # a handed-off request needs its whole context's blocks at once
        total = max(total, 40)
    v.kv_blocks_total = total
    v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.01, c_p=1e-4, a_d=1e-6, b_d=1e-3))
    req, done, gen, first = {}, {}, {}, {}  # id -> Request, computed tokens, generated tokens, first token

    def state(i):
        st = s.RequestState(req[i], done[i], gen[i])
        if i in first:
            st.first_token = first[i]
        return st

    running, waiting = [], []
    now, next_id, planned_calls = 0.0, 0, 0
    asked_epoch, preempted_, admitted_, progressed_, left = 0, [], [], [], set()
    for step in range(steps):
        for _ in range(rng.choice([0, 0, 1, 3, 8])):  # arrivals, appended
            arrival = round(now, 1) if tie_arrivals else now + 0.01 * rng.random()
            prio = rng.randrange(priorities)
            req[next_id] = _request(next_id, arrival, rng.randint(1, 300), rng.randint(1, 30), ttft, prio)
            done[next_id], gen[next_id] = 0, 0
            if handoff:
                done[next_id], gen[next_id] = req[next_id].prompt_len, 1
                first[next_id] = arrival + 2 * ttft * rng.random()
            waiting.append(next_id)
            next_id += 1
        if waiting and rng.random() < 0.05:  # a cancel from anywhere in the queue
            rid = waiting.pop(rng.randrange(len(waiting)))
            cpp.on_finished(rid, now)
            _finished(py, rid, now)
            left.add(rid)
        if not running and not waiting:
            now += 0.05
            continue
        v.running = [state(i) for i in running]
        v.waiting = [state(i) for i in waiting]
        v.kv_blocks_free = total - sum(v.blocks_for(done[i]) for i in running)
        v.epoch = step + 1
        if step % 17 == 16:  # the belief corrected (ProServe 4.1): kept metrics must follow it
            v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.01, c_p=rng.choice([5e-5, 1e-4, 2e-4]), a_d=1e-6, b_d=1e-3))
        if report_changes:
            c = s.ViewChanges()
            c.since_epoch = asked_epoch
            c.preempted, c.admitted, c.progressed = (
                [i for i in x if i not in left] for x in (preempted_, admitted_, progressed_)
            )
            if rng.random() < 0.05:  # a list that disagrees with the view: found out, the view read whole
                c.admitted = c.admitted + [10**9]
            v.changes = c
            asked_epoch, preempted_, admitted_, progressed_, left = v.epoch, [], [], [], set()
        plan = cpp.schedule(v, now)
        items, preempted = py.schedule(v, now)
        assert [(i.request, i.tokens) for i in plan.items] == items, step
        assert list(plan.preempt) == preempted, step
        planned_calls += bool(items)
        # As the engine applies a plan: preempted to the queue's front (running order), the
        # planned waiting requests to the end of running (queue order), then the tokens.
        pre = set(preempted)
        evicted = [i for i in running if i in pre]
        running = [i for i in running if i not in pre]
        for i in evicted:
            done[i] = 0
        waiting = evicted + waiting
        k = dict(items)
        preempted_ = evicted + preempted_
        admitted_ += [i for i in waiting if i in k]
        running += [i for i in waiting if i in k]
        waiting = [i for i in waiting if i not in k]
        now += 0.01 + 0.04 * rng.random()
        for i in list(running):
            if i not in k:
                continue
            done[i] += k[i]
            progressed_.append(i)
            if done[i] == req[i].prompt_len + gen[i]:
                gen[i] += 1
                first.setdefault(i, now)
                if gen[i] >= req[i].output_len:
                    running.remove(i)
                    cpp.on_finished(i, now)
                    _finished(py, i, now)
                    left.add(i)
    return planned_calls


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10**9), st.sampled_from([1, 3, 6]), st.sampled_from([0.001, 0.02]), st.sampled_from([0.05, 0.3, 2.0])
)
def test_mlfq_kept_order_matches_reference_over_an_engine_run(seed, levels, q0, promote):
    params = {"levels": levels, "base_quantum_s": q0, "promote_after_s": promote}
    cpp = _core.make_batch_scheduler("mlfq", params)
    assert engine_loop(cpp, ref.Mlfq(levels, q0, promote), seed) > 0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**9))
def test_mlfq_kept_order_with_tied_arrivals(seed):
    """Arrivals on a 0.1 s grid: ties in (level, arrival), ordered by position."""
    cpp = _core.make_batch_scheduler("mlfq", {"promote_after_s": 0.3})
    assert engine_loop(cpp, ref.Mlfq(6, 0.02, 0.3), seed, tie_arrivals=True) > 0


class _Edf:  # the stateless reference behind the engine loop's interface
    def __init__(self, budget):
        self.budget = budget

    def schedule(self, v, now):
        return ref.edf(v, self.budget)

    def finished(self, rid):
        pass


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([16, 128, 512]), st.booleans(), st.booleans())
def test_edf_kept_order_matches_reference_over_an_engine_run(seed, budget, ties, report_changes):
    cpp = _core.make_batch_scheduler("edf", {"token_budget": budget})
    assert engine_loop(cpp, _Edf(budget), seed, tie_arrivals=ties, report_changes=report_changes) > 0


class _Slide:
    def __init__(self, params):
        self.p = proserve_ref.SlideParams(**params)

    def schedule(self, v, now):
        return proserve_ref.slide_batching(v, now, self.p)

    def finished(self, rid):
        pass


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**9),
    st.sampled_from(["a", "p"]),
    st.sampled_from(["slide", "density", "deadline"]),
    st.booleans(),
    st.sampled_from([0.001, 0.2, 1.0]),
)
def test_slide_batching_kept_queue_matches_reference_over_an_engine_run(seed, phi, order, latency_aware, ttft):
    """Short TTFTs make the queue late (every waiting request URGENT: the kept walk)."""
    params = {"phi": phi, "order": order, "latency_aware": latency_aware}
    cpp = _core.make_batch_scheduler("slide_batching", params)
    assert engine_loop(cpp, _Slide(params), seed, ttft=ttft) > 0


class _Triage:
    def __init__(self, params):
        self.t = triage_ref.SloTriage(**params)

    def schedule(self, v, now):
        return self.t.schedule(v, now)

    def finished_at(self, rid, now):
        self.t.on_finished(rid, now)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**9),
    st.sampled_from([0, 64, 512]),
    st.booleans(),
    st.sampled_from([1, 3]),
    st.sampled_from([0.05, 1.0]),
    st.booleans(),
)
def test_slo_triage_matches_reference_over_an_engine_run(seed, budget, ties, priorities, ttft, report_changes):
    """slo_triage's rates read only the queue's new tail in an engine's view (instance_rates.h),
    it skips the sort of a queue already in (priority, arrival) order, and once a split finds
    nothing to predict in the queue (ttft=0.05: all late) it keeps the queue across calls, as
    on a decode instance, until an arrival has a first token to predict; the reference reads
    and sorts the whole queue every call."""
    params = {"token_budget": budget, "rate_window_s": 2.0}
    cpp = _core.make_batch_scheduler("slo_triage", params)
    calls = engine_loop(
        cpp, _Triage(params), seed, tie_arrivals=ties, ttft=ttft, priorities=priorities, report_changes=report_changes
    )
    assert calls > 0


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**9),
    st.sampled_from([0, 64]),
    st.booleans(),
    st.sampled_from([1, 3]),
    st.sampled_from([0.05, 1.0]),
    st.booleans(),
)
def test_slo_triage_kept_decode_queue_matches_reference(seed, budget, ties, priorities, ttft, report_changes):
    """A decode instance's queue of handed-off requests, some with late first tokens, with
    preemptions and cancels: slo_triage keeps it split and ordered across calls
    (batch/kept_queue.h); the reference splits and sorts it every call."""
    params = {"token_budget": budget, "rate_window_s": 2.0}
    cpp = _core.make_batch_scheduler("slo_triage", params)
    calls = engine_loop(
        cpp, _Triage(params), seed, 120, ties, ttft, priorities, handoff=True, report_changes=report_changes
    )
    assert calls > 0


class _FreshEach(s.BatchScheduler):
    """A registered scheduler made anew for every call: it keeps nothing, so it reads the view whole."""

    def __init__(self, name, params):
        super().__init__()
        self.args = (name, params)

    def name(self):
        return "fresh_" + self.args[0]

    def schedule(self, v, now):
        return _core.make_batch_scheduler(*self.args).schedule(v, now)


def _edf_lockstep(seed):
    """Two simulator engines (EngineModel) get the same arrivals and cancels: one's EDF keeps
    its orders and follows the engine's changes (InstanceView.changes), the other's is made
    anew for every call (EDF keeps nothing else). Asserts the same plans, step by step;
    returns (plans, preemptions)."""
    from slocore.profiles import hardware_profile

    rng = random.Random(seed)
    hw = hardware_profile("h100-llama2-7b")[0]
    params = {"token_budget": rng.choice([64, 512])}
    kw = dict(kv_blocks=rng.choice([30, 80]), max_batch_tokens=512, max_num_seqs=rng.choice([4, 16]))
    kept = _core.EngineModel(hw, _core.make_batch_scheduler("edf", params), **kw)
    fresh = _core.EngineModel(hw, _FreshEach("edf", params), **kw)
    now, dt, next_id, plans, preempted = 0.0, 0.0, 0, 0, 0
    for _ in range(150):
        for _ in range(rng.choice([0, 0, 1, 4])):
            r = _request(next_id, now, rng.randint(1, 200), rng.randint(1, 30), rng.choice([0.05, 1.0]))
            for e in (kept, fresh):
                e.add(s.RequestState(r))
            next_id += 1
        ids = [x.request.id for x in kept.view.running + kept.view.waiting]
        if ids and rng.random() < 0.1:  # the client went away, maybe mid-iteration
            rid = rng.choice(ids)
            assert kept.cancel(rid, now) == fresh.cancel(rid, now)
        if kept.busy:
            now += dt
            assert kept.finish(now) == fresh.finish(now)
            continue
        dt = kept.start(now)
        assert fresh.start(now) == dt
        if dt < 0:
            now += 0.01
            continue
        a, b = kept.plan, fresh.plan
        assert [(i.request, i.tokens) for i in a.items] == [(i.request, i.tokens) for i in b.items]
        assert list(a.preempt) == list(b.preempt)
        plans += 1
        preempted += len(a.preempt)
    return plans, preempted


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9))
def test_the_simulators_engine_reports_its_changes_as_they_happened(seed):
    """Same plans through preemptions and cancels of running and waiting requests, in flight or not."""
    plans, _ = _edf_lockstep(seed)
    assert plans > 20


def test_the_engine_lockstep_preempts():
    assert sum(_edf_lockstep(seed)[1] for seed in range(5)) > 0
