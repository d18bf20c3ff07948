"""Baseline batch schedulers: C++ == reference on random engine views; every plan is
feasible (the contract in batch_scheduler.h); every scheduler drives a KV-pressured run
to completion in the simulator; hand-checked orderings."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import batch_baselines as ref
from simkit import config, profile, requests

NAMES = ["vllm_fcfs", "orca", "sarathi_fcfs", "sarathi_priority", "edf"]


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
        r = s.Request(next(rid), draw(st.floats(0, 10)), prompt, output_len=gen + 50, ttft=draw(st.floats(0.1, 2)),
                      tpot=draw(st.floats(0.01, 0.2)), priority=draw(st.integers(0, 2)))
        st_ = s.RequestState(r, computed, gen)
        running.append(st_)
        used += v.blocks_for(computed)
    waiting = []
    for _ in range(draw(st.integers(0, 24))):
        r = s.Request(next(rid), draw(st.floats(0, 10)), draw(st.integers(1, 900)), output_len=20,
                      ttft=draw(st.floats(0.1, 2)), tpot=draw(st.floats(0.01, 0.2)), priority=draw(st.integers(0, 2)))
        waiting.append(s.RequestState(r, 0, 0))
    v.running, v.waiting = running, waiting
    v.kv_blocks_total = used + draw(st.integers(0, 200))
    v.kv_blocks_free = v.kv_blocks_total - used
    return v


def feasible(v, plan):
    """The batch-plan contract: known ids, once each, token limits, budget, seqs, KV."""
    by_id = {x.request.id: (x, True) for x in v.running} | {x.request.id: (x, False) for x in v.waiting}
    pre = set(plan.preempt)
    assert all(i in by_id and by_id[i][1] for i in pre)
    blocks = v.kv_blocks_free + sum(v.blocks_for(by_id[i][0].computed) for i in pre)
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


@pytest.mark.parametrize("name", NAMES)
def test_scheduler_finishes_a_kv_pressured_run(name):
    reqs = requests(150, rate=40, prompt=(32, 300), output=(5, 60))
    res = _core.simulate(reqs, config(profile(kv_blocks=60), instances=2, sched=lambda: _core.make_batch_scheduler(name)))
    assert res.stats["plan_violations"] == 0 and res.stats["stalled"] == 0
    assert all(r.outcome == s.Outcome.FINISHED for r in res.recorder.records())
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)


def state(rid, prompt, computed=0, gen=0, arrival=0.0, prio=0, ttft=1.0, tpot=0.1):
    return s.RequestState(s.Request(rid, arrival, prompt, output_len=100, ttft=ttft, tpot=tpot, priority=prio), computed, gen)


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
