"""Baseline batch schedulers: C++ == reference on random engine views; every plan is
feasible (the contract in batch_scheduler.h); every scheduler drives a KV-pressured run
to completion in the simulator; hand-checked orderings."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from simkit import config, profile, requests
from slocore import _core
from slocore.reference import batch_baselines as ref

NAMES = ["vllm_fcfs", "orca", "sarathi_fcfs", "sarathi_priority", "edf", "weighted_vtc", "mlfq"]


@st.composite
def views(draw):
    v = s.InstanceView(0)
    v.block_size = draw(st.sampled_from([1, 4, 16]))
    v.max_batch_tokens = draw(st.integers(1, 2048))
    v.max_num_seqs = draw(st.integers(1, 64))
    rid = iter(range(10**6))
    running, used = [], 0
    for _ in range(draw(st.integers(0, 24))):
        prompt = draw(st.integers(1, 600))
        gen = draw(st.integers(0, 40))
        done = prompt + gen - (1 if gen else 0)
        computed = done if draw(st.booleans()) else draw(st.integers(1, max(1, prompt + gen - 1)))
        r = s.Request(
            next(rid),
            draw(st.floats(0, 10)),
            prompt,
            output_len=gen + 50,
            ttft=draw(st.floats(0.1, 2)),
            tpot=draw(st.floats(0.01, 0.2)),
            priority=draw(st.integers(0, 2)),
            priority_weight=draw(st.sampled_from([1.0, 2.0, 4.0])),
        )
        st_ = s.RequestState(r, computed, gen)
        if draw(st.booleans()):  # blocks other running requests hold too
            st_.shared = draw(st.integers(0, computed // v.block_size)) * v.block_size
        running.append(st_)
        used += v.blocks_for(computed)
    waiting = []
    for _ in range(draw(st.integers(0, 24))):
        r = s.Request(
            next(rid),
            draw(st.floats(0, 10)),
            draw(st.integers(1, 900)),
            output_len=20,
            ttft=draw(st.floats(0.1, 2)),
            tpot=draw(st.floats(0.01, 0.2)),
            priority=draw(st.integers(0, 2)),
        )
        w = s.RequestState(r, 0, 0)
        if draw(st.booleans()):  # a cached prefix (whole blocks), some of it held by running requests
            hit = draw(st.integers(0, (r.prompt_len - 1) // v.block_size))
            w.computed = w.cached = hit * v.block_size
            w.shared = draw(st.integers(0, hit)) * v.block_size
        waiting.append(w)
    v.running, v.waiting = running, waiting
    v.kv_blocks_total = used + draw(st.integers(0, 200))
    v.kv_blocks_free = v.kv_blocks_total - used
    v.model = s.LatencyModel(
        s.LatencyCoeffs(
            t_c=0.01,
            a_p=draw(st.sampled_from([0.0, 1e-8])),
            c_p=1e-4,
            a_d=1e-6,
            b_d=draw(st.sampled_from([1e-4, 1e-2])),
        )
    )
    return v


def feasible(v, plan):
    """The batch-plan contract: known ids, once each, token limits, budget, seqs, KV."""
    by_id = {x.request.id: (x, True) for x in v.running} | {x.request.id: (x, False) for x in v.waiting}
    pre = set(plan.preempt)
    assert all(i in by_id and by_id[i][1] for i in pre)
    blocks = v.kv_blocks_free + sum(
        v.blocks_for(by_id[i][0].computed) - by_id[i][0].shared // v.block_size for i in pre
    )
    ids = [it.request for it in plan.items]
    assert len(ids) == len(set(ids)) and not (set(ids) & pre)
    assert len(ids) <= v.max_num_seqs and sum(it.tokens for it in plan.items) <= v.max_batch_tokens
    for it in plan.items:
        st_, running = by_id[it.request]
        assert 1 <= it.tokens <= st_.to_compute
        blocks -= v.blocks_needed(st_, it.tokens, running)
    assert blocks >= 0


@given(views(), st.sampled_from(NAMES))
def test_plans_are_feasible(v, name):
    plan = _core.make_batch_scheduler(name).schedule(v, 0.0)
    feasible(v, plan)


@given(views(), st.integers(1, 1024))
def test_sarathi_and_edf_match_reference(v, budget):
    for name, fn in (("sarathi_fcfs", ref.sarathi_fcfs), ("edf", ref.edf)):
        plan = _core.make_batch_scheduler(name, {"token_budget": budget}).schedule(v, 0.0)
        items, preempted = fn(v, budget)
        assert [(i.request, i.tokens) for i in plan.items] == items, name
        assert list(plan.preempt) == preempted, name


@given(st.lists(views(), min_size=1, max_size=4), st.integers(1, 1024), st.sampled_from([1.0, 2.0]))
def test_weighted_vtc_matches_reference_over_calls(vs, budget, w_out):
    """VTC is stateful (counters, lift): the same sequence of views gives the same plans."""
    cpp = _core.make_batch_scheduler("weighted_vtc", {"token_budget": budget, "w_out": w_out})
    py = ref.WeightedVtc(budget, 1.0, w_out)
    for v in vs:
        plan = cpp.schedule(v, 0.0)
        assert ([(i.request, i.tokens) for i in plan.items], list(plan.preempt)) == py.schedule(v)


@given(st.lists(views(), min_size=1, max_size=4), st.sampled_from([1, 3, 6]), st.sampled_from([0.001, 0.02]))
def test_mlfq_matches_reference_over_calls(vs, levels, q0):
    cpp = _core.make_batch_scheduler("mlfq", {"levels": levels, "base_quantum_s": q0, "promote_after_s": 1.0})
    py = ref.Mlfq(levels, q0, 1.0)
    for t, v in enumerate(vs):
        plan = cpp.schedule(v, 0.7 * t)
        assert ([(i.request, i.tokens) for i in plan.items], list(plan.preempt)) == py.schedule(v, 0.7 * t)


def _state(rid, arrival, prompt, gen=0, priority=0, weight=1.0):
    r = s.Request(rid, arrival, prompt, output_len=100, ttft=1.0, tpot=0.1, priority=priority, priority_weight=weight)
    return s.RequestState(r, prompt + gen - 1 if gen else 0, gen)


def _view(running=(), waiting=(), budget=4096, seqs=64):
    v = s.InstanceView(0)
    v.block_size, v.max_batch_tokens, v.max_num_seqs = 16, budget, seqs
    v.kv_blocks_total = v.kv_blocks_free = 10_000
    v.running, v.waiting = list(running), list(waiting)
    v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.01, c_p=1e-4, a_d=1e-6, b_d=1e-3))
    return v


def test_weighted_vtc_serves_the_heavier_class_more():
    """Two backlogged classes, weights 3:1, one prompt admitted per call: admissions follow
    the counters, so class 0 gets about 3x the prompt tokens of class 1."""
    vtc = _core.make_batch_scheduler("weighted_vtc", {"token_budget": 100})
    served = {0: 0, 1: 0}
    rid = iter(range(10**6))
    for step in range(200):
        waiting = [_state(next(rid), step, 100, priority=0, weight=3.0), _state(next(rid), step, 100, priority=1)]
        plan = vtc.schedule(_view(waiting=waiting), float(step))
        for it in plan.items:
            served[0 if it.request == waiting[0].request.id else 1] += it.tokens
    assert 2.6 < served[0] / served[1] < 3.4, served


def test_mlfq_skip_join_and_demotion():
    """A long prompt joins a lower level (skip-join) than a short one; a request that used its
    quantum drops a level; the short newcomer then runs before the long one."""
    m = _core.make_batch_scheduler("mlfq", {"levels": 6, "base_quantum_s": 0.02, "promote_after_s": 100})
    short, long_ = _state(1, 0.0, 10), _state(2, 0.0, 2000)  # 1 ms vs 200 ms of prefill
    plan = m.schedule(_view(waiting=[long_, short], budget=100, seqs=1), 0.0)
    assert [i.request for i in plan.items] == [1]  # level 0 beats the long prompt's level 4
    # The short one decodes (1 ms + 1 us per cached token, ~1.25 ms here) and sinks through
    # quanta 20+40+80+160+320 ms = 0.62 s, about 495 decodes;
    # only once it is below level 4 does the long prompt get the single seat.
    for step in range(1, 2000):
        r = _state(1, 0.0, 10, gen=step)
        plan = m.schedule(_view(running=[r], waiting=[long_], budget=4096, seqs=1), 0.001 * step)
        if plan.items[0].request == 2:
            break
    assert 450 < step < 550, step


@pytest.mark.parametrize("name", ["vllm_fcfs", "orca"])
def test_prompt_longer_than_batch_limit_is_chunked(name):
    plan = _core.make_batch_scheduler(name).schedule(_view(waiting=[_state(1, 0.0, 5000)], budget=4096), 0.0)
    assert [(i.request, i.tokens) for i in plan.items] == [(1, 4096)]


@pytest.mark.parametrize("name", NAMES)
def test_scheduler_finishes_a_kv_pressured_run(name):
    reqs = requests(150, rate=40, prompt=(32, 300), output=(5, 60))
    res = _core.simulate(
        reqs, config(profile(kv_blocks=60), instances=2, sched=lambda: _core.make_batch_scheduler(name))
    )
    assert res.stats["plan_violations"] == 0 and res.stats["stalled"] == 0
    assert all(r.outcome == s.Outcome.FINISHED for r in res.recorder.records())
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)


def state(rid, prompt, computed=0, gen=0, arrival=0.0, prio=0, ttft=1.0, tpot=0.1):
    return s.RequestState(
        s.Request(rid, arrival, prompt, output_len=100, ttft=ttft, tpot=tpot, priority=prio), computed, gen
    )


def engine(running=(), waiting=(), blocks=1000, budget=4096):
    v = s.InstanceView(0)
    v.running, v.waiting = list(running), list(waiting)
    v.kv_blocks_total = blocks + sum(v.blocks_for(x.computed) for x in running)
    v.kv_blocks_free = blocks
    v.max_batch_tokens = budget
    return v


def plan_of(name, v, **params):
    p = _core.make_batch_scheduler(name, params).schedule(v, 0.0)
    return [(i.request, i.tokens) for i in p.items], list(p.preempt)


def test_vllm_is_prefill_first_and_sarathi_decode_first():
    v = engine(running=[state(1, 10, 10, 1)], waiting=[state(2, 100)])
    assert plan_of("vllm_fcfs", v) == ([(2, 100)], [])
    assert plan_of("sarathi_fcfs", v, token_budget=64) == ([(1, 1), (2, 63)], [])
    assert plan_of("orca", v) == ([(1, 1), (2, 100)], [])


def test_vllm_admits_prompts_only_while_running_requests_stay_within_max_num_seqs():
    # vLLM V0 counts the running requests against max_num_seqs: with 2 running and a limit of
    # 3, one prompt joins; with 3 running, none does and the running requests decode
    run = [state(1, 10, 10, 1), state(2, 10, 10, 1)]
    v = engine(running=run, waiting=[state(3, 20), state(4, 20)])
    v.max_num_seqs = 3
    assert plan_of("vllm_fcfs", v) == ([(3, 20)], [])
    v = engine(running=[*run, state(5, 10, 10, 1)], waiting=[state(3, 20)])
    v.max_num_seqs = 3
    assert plan_of("vllm_fcfs", v) == ([(1, 1), (2, 1), (5, 1)], [])


def test_priority_and_deadline_orders():
    w = [state(1, 50, arrival=0.0, prio=2), state(2, 50, arrival=1.0, prio=0)]
    assert plan_of("sarathi_fcfs", engine(waiting=w), token_budget=60)[0] == [(1, 50), (2, 10)]
    assert plan_of("sarathi_priority", engine(waiting=w), token_budget=60)[0] == [(2, 50), (1, 10)]
    # EDF: r3's first token is due at 0.2, before r1 (1.0) and r2 (1.0 + 1.0).
    w = [state(1, 50, ttft=1.0), state(2, 50, arrival=1.0), state(3, 50, ttft=0.2)]
    assert plan_of("edf", engine(waiting=w), token_budget=60)[0] == [(3, 50), (1, 10)]


def test_kv_shortage_preempts_newest():
    run = [state(1, 16, 16, 1), state(2, 16, 16, 1)]  # each holds 1 block, both need a 2nd
    v = engine(running=run, blocks=1)
    assert plan_of("sarathi_fcfs", v) == ([(1, 1)], [2])
    assert plan_of("vllm_fcfs", v) == ([(1, 1)], [2])


def test_bad_params():
    with pytest.raises(ValueError, match="token_budget"):
        _core.make_batch_scheduler("sarathi_fcfs", {"token_budget": 0})
    with pytest.raises(ValueError, match="unknown parameter"):
        _core.make_batch_scheduler("orca", {"x": 1})
