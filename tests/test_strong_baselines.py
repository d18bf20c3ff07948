"""Strong baselines: power_of_two (global) and vllm_priority (engine) match their pure-Python
references on random views; plans are feasible; hand-checked behaviour; simulator runs."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import power_of_two as ref_p2c
from slocore.reference import vllm_priority as ref_vp
from slocore.sim import simulate, workloads
from test_batch_baselines import _state, _view, feasible, views


def _router_view(i, rng):
    v = s.InstanceView(i)
    n_run, n_wait = int(rng.integers(0, 6)), int(rng.integers(0, 6))
    mk = lambda k: s.RequestState(s.Request(1000 * i + k, 0.0, 10, output_len=5, ttft=1.0, tpot=0.1), 0, 0)  # noqa: E731
    v.running = [mk(k) for k in range(n_run)]
    v.waiting = [mk(100 + k) for k in range(n_wait)]
    v.accepting = bool(rng.random() > 0.2)
    return v


@given(seed=st.integers(0, 2**32 - 1), policy_seed=st.integers(0, 2**40))
def test_power_of_two_matches_reference(seed, policy_seed):
    rng = np.random.default_rng(seed)
    cpp = _core.make_global_policy("power_of_two", {"seed": float(policy_seed)})
    py = ref_p2c.PowerOfTwo(policy_seed)
    # float64 parameters: only seeds exactly representable survive the trip (all below 2**53).
    rid = 0
    for step in range(5):
        for _ in range(int(rng.integers(0, 12))):
            r = s.Request(rid, 0.0, int(rng.integers(1, 100)), output_len=5, ttft=1.0, tpot=0.1)
            cpp.submit(r, 0.0, math.nan)
            py.submit(r)
            rid += 1
        vs = [_router_view(i, rng) for i in range(int(rng.integers(1, 7)))]
        got = [(a.request, a.instance) for a in cpp.poll(float(step), vs)]
        assert got == py.poll(vs), f"step {step}"
        assert cpp.pending() == py.pending()


def test_power_of_two_picks_the_less_loaded_of_two():
    """With two instances both are always sampled: the emptier one wins every time."""
    pol = _core.make_global_policy("power_of_two", {"seed": 7})
    busy, idle = s.InstanceView(0), s.InstanceView(1)
    busy.waiting = [
        s.RequestState(s.Request(100 + k, 0.0, 10, output_len=5, ttft=1.0, tpot=0.1), 0, 0) for k in range(5)
    ]
    for i in range(4):
        pol.submit(s.Request(i, 0.0, 10, output_len=5, ttft=1.0, tpot=0.1), 0.0, math.nan)
    # placed requests count: 4 go to the idle one (0 -> 4 < 5 outstanding on the busy one)
    assert [a.instance for a in pol.poll(0.0, [busy, idle])] == [1, 1, 1, 1]


def test_power_of_two_rejects_bad_params():
    import pytest

    with pytest.raises(ValueError, match="seed"):
        _core.make_global_policy("power_of_two", {"seed": -1})
    with pytest.raises(ValueError):
        _core.make_global_policy("power_of_two", {"sed": 1})


@given(views(), st.sampled_from([0, 1, 64, 512, 4096]))
def test_vllm_priority_matches_reference(v, budget):
    plan = _core.make_batch_scheduler("vllm_priority", {"token_budget": budget}).schedule(v, 0.0)
    feasible(v, plan)
    items, preempted = ref_vp.vllm_priority(v, budget)
    assert [(i.request, i.tokens) for i in plan.items] == items
    assert list(plan.preempt) == preempted


def test_vllm_priority_admits_by_priority_and_keeps_running_first():
    """Running decodes first (vLLM V1 runs the running list before the waiting queue); the
    budget left goes to the waiting request of the best (lowest) priority, older first."""
    run = [_state(0, 0.0, 10, gen=3, priority=2)]
    waiting = [_state(1, 1.0, 100, priority=1), _state(2, 2.0, 100, priority=0), _state(3, 0.5, 100, priority=0)]
    plan = _core.make_batch_scheduler("vllm_priority", {"token_budget": 151}).schedule(_view(run, waiting), 0.0)
    assert [(i.request, i.tokens) for i in plan.items] == [(0, 1), (3, 100), (2, 50)]


def test_vllm_priority_preempts_lowest_priority_and_skips_waiting():
    """KV for one more block only: the decode of the high-priority request needs a block, so
    the lowest-priority running request is preempted and nothing waiting is admitted."""
    hi, lo = _state(0, 1.0, 16, gen=1, priority=0), _state(1, 0.0, 32, gen=1, priority=5)
    v = _view([hi, lo], [_state(2, 0.0, 4, priority=0)])
    v.kv_blocks_total, v.kv_blocks_free = 3, 0  # hi holds 1 block, lo 2; hi's 17th token needs a new one
    plan = _core.make_batch_scheduler("vllm_priority").schedule(v, 0.0)
    assert list(plan.preempt) == [1]
    assert [(i.request, i.tokens) for i in plan.items] == [(0, 1)]


def test_strong_baselines_drive_a_run_to_completion():
    w = workloads.with_priorities(workloads.sharegpt_like(rate=20, n=120, seed=1), seed=1)
    for kw in (
        dict(global_policy="power_of_two", batch_scheduler="edf"),
        dict(global_policy="least_outstanding", batch_scheduler="vllm_priority"),
    ):
        res = simulate(w, profile="ascend910b-qwen7b", instances=3, **kw)
        assert res.summary["finished"] == len(w), kw
