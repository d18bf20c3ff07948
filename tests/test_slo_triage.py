"""slo_triage (the slocore stack's engine scheduler, csrc/slocore/stack/slo_triage.h): matches
its pure-Python reference on random views and times; plans are feasible; hand-checked triage
(late requests after feasible ones, never dropped); a simulated overload gains over vLLM's
priority scheduler and a light load is unchanged."""

import math

from hypothesis import find, given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import slo_triage as ref
from slocore.sim import simulate, workloads
from test_batch_baselines import _state, _view, feasible, views


@st.composite
def timed_views(draw):
    v = draw(views())
    run = list(v.running)
    for x in run:  # running requests past their first token got it at some time
        if x.generated > 0:
            x.first_token = x.request.arrival + draw(st.floats(0.0, 3.0))
    v.running = run
    return v, draw(st.floats(0.0, 14.0))


@st.composite
def crowded_views(draw):
    """Waiting requests that arrived shortly before `now` with first-token deadlines within
    about 0.3 s of it and a prefill cost of 1e-4 s per token: many are predicted late behind
    the feasible work ahead, so Moore-Hodgson's demotion within a priority level is reached."""
    v, now = draw(timed_views())
    waiting = []
    for x in v.waiting:
        r = x.request
        ttft = draw(st.floats(0.05, 0.4))
        arrival = max(0.0, now - draw(st.floats(0.0, 0.1)))
        waiting.append(
            s.RequestState(
                s.Request(r.id, arrival, r.prompt_len, output_len=20, ttft=ttft, tpot=0.1, priority=r.priority), 0, 0
            )
        )
    v.waiting = waiting
    return v, now


def _check_against_reference(vn, budget, margin, guard, count_optimal):
    v, now = vn
    params = {"token_budget": budget, "margin": margin, "tpot_guard": guard, "count_optimal": count_optimal}
    plan = _core.make_batch_scheduler("slo_triage", params).schedule(v, now)
    feasible(v, plan)
    items, preempted = ref.slo_triage(v, now, budget, margin, guard, count_optimal)
    assert [(i.request, i.tokens) for i in plan.items] == items
    assert list(plan.preempt) == preempted


BUDGETS, MARGINS = st.sampled_from([0, 1, 64, 512, 4096]), st.sampled_from([0.0, 0.2, 1.0])


@given(timed_views(), BUDGETS, MARGINS, st.booleans(), st.booleans())
def test_slo_triage_matches_reference(vn, budget, margin, guard, count_optimal):
    _check_against_reference(vn, budget, margin, guard, count_optimal)


@given(crowded_views(), BUDGETS, MARGINS, st.booleans(), st.booleans())
def test_slo_triage_matches_reference_when_crowded(vn, budget, margin, guard, count_optimal):
    _check_against_reference(vn, budget, margin, guard, count_optimal)


def _late_ids(v, now, count_optimal):
    return [x.request.id for x in ref.split_waiting(v, now, v.max_batch_tokens, 0.2, count_optimal)[1]]


def _demotes(vn) -> bool:
    """Moore-Hodgson changes the reference's late split on this view."""
    v, now = vn
    return _late_ids(v, now, True) != _late_ids(v, now, False)


def test_crowded_views_reach_the_demotion():
    """The differential test's views do reach Moore-Hodgson's path (find raises if no view of
    the strategy does within its example budget)."""
    v, now = find(crowded_views(), _demotes, settings=settings(max_examples=2000, deadline=None))
    greedy, count_optimal = set(_late_ids(v, now, False)), set(_late_ids(v, now, True))
    assert count_optimal - greedy and greedy - count_optimal  # one demoted, one made feasible


def _serve_one_at_a_time(count_optimal: bool):
    """One engine, one sequence per iteration (max_num_seqs 1; a single machine in Moore's
    sense), 1,000 tokens per iteration, 0.01 s + 1e-4 s per token, TTFT 0.23 s for all. At
    t = 0 a 2,000-token prompt A arrives, then three 600-token prompts B, C, D (1 ms apart).
    Runs the scheduler to the end (C++ and reference in lockstep; one output token each) and
    returns the request ids whose first token came within the TTFT."""
    reqs = [s.Request(i, 0.001 * i, n, output_len=1, ttft=0.23, tpot=0.1) for i, n in enumerate([2000, 600, 600, 600])]
    computed = {r.id: 0 for r in reqs}
    waiting, running, on_time, now = list(reqs), [], [], 0.0
    sched = _core.make_batch_scheduler("slo_triage", {"count_optimal": count_optimal})
    while waiting or running:
        v = _view(
            [s.RequestState(r, computed[r.id], 0) for r in running],
            [s.RequestState(r, 0, 0) for r in waiting],
            budget=1000,
            seqs=1,
        )
        plan = sched.schedule(v, now)
        items = [(i.request, i.tokens) for i in plan.items]
        assert items == ref.slo_triage(v, now, count_optimal=count_optimal)[0]
        now += ref.predicted_prefill_s(v, sum(k for _, k in items), 1000, 0.0)
        for rid, k in items:
            r = reqs[rid]
            if r in waiting:
                waiting.remove(r)
                running.append(r)
            computed[rid] += k
            if computed[rid] == r.prompt_len:
                running.remove(r)
                if now < r.arrival + r.slo.ttft:
                    on_time.append(rid)
    return on_time


def test_moore_hodgson_keeps_three_on_time_where_greedy_keeps_one():
    """Greedy: A is predicted feasible (0.8 x 0.22 s) and B, C, D late behind it (0.8 x 0.29 s
    >= 0.231 s); A runs first and only A is on time. Moore-Hodgson: B, predicted late, demotes
    the longer feasible A (B alone: 0.07 s), then C and D fit: B, C, D on time (0.07, 0.14,
    0.21 s), A late."""
    assert _serve_one_at_a_time(False) == [0]
    assert _serve_one_at_a_time(True) == [1, 2, 3]


def test_late_waiting_request_goes_after_feasible_ones():
    """Budget for one prompt: vLLM priority admits the oldest (already past its TTFT deadline
    at t=2.5, deadline 1.0 + 1.0 s); triage admits the newer one that can still make it."""
    late, fresh = _state(0, 1.0, 100), _state(1, 2.0, 100)
    v = _view(waiting=[late, fresh], budget=100)
    assert [i.request for i in _core.make_batch_scheduler("vllm_priority").schedule(v, 2.5).items] == [0]
    assert [i.request for i in _core.make_batch_scheduler("slo_triage").schedule(v, 2.5).items] == [1]
    # with budget left over the late one still runs (never dropped)
    v = _view(waiting=[late, fresh], budget=150)
    assert [(i.request, i.tokens) for i in _core.make_batch_scheduler("slo_triage").schedule(v, 2.5).items] == [
        (1, 100),
        (0, 50),
    ]


def test_predicted_late_uses_the_model_and_the_queue_ahead():
    """Model: 0.01 s per iteration + 1e-4 s per prefill token. A 1000-token prompt with a
    0.1 s TTFT is predicted at 0.11 s: late with margin 0 (it goes after the short newer
    request), feasible with margin 0.2 (0.8 x 0.11 = 0.088 < 0.1: vLLM order). Behind 1000
    feasible tokens, a 100-token prompt with a 0.2 s TTFT is predicted at 0.13 s: feasible."""
    big = s.RequestState(s.Request(0, 0.0, 1000, output_len=10, ttft=0.1, tpot=0.1), 0, 0)
    small = s.RequestState(s.Request(1, 0.0, 100, output_len=10, ttft=0.2, tpot=0.1), 0, 0)
    v = _view(waiting=[big, small], budget=1000)
    assert math.isclose(ref.predicted_prefill_s(v, 1100, 1000, 0.0), 2 * 0.01 + 0.1 + 0.01)
    strict = _core.make_batch_scheduler("slo_triage", {"margin": 0.0}).schedule(v, 0.0)
    loose = _core.make_batch_scheduler("slo_triage", {"margin": 0.2}).schedule(v, 0.0)
    assert [(i.request, i.tokens) for i in strict.items] == [(1, 100), (0, 900)]
    assert [(i.request, i.tokens) for i in loose.items] == [(0, 1000)]


def test_tpot_guard_caps_new_prefill_tokens():
    """One on-time decode (TPOT SLO 0.1 s) over 1,000 cached tokens: with margin 0, 0.01 s fixed
    + 0.002 s decode leaves 0.088 s, i.e. 880 prefill tokens at 1e-4 s each; with the default
    margin 0.2 the iteration aims at 0.08 s, leaving 680; without the guard the waiting prompt
    gets the whole 2,000-token budget."""
    dec = _state(0, 0.0, 1000, gen=1)
    dec.first_token = 0.5
    waiting = s.RequestState(s.Request(1, 0.9, 3000, output_len=10, ttft=10.0, tpot=0.1), 0, 0)
    v = _view([dec], [waiting], budget=2000)
    assert ref.max_prefill_tokens(v, 0.1 - 0.01 - v.model.decode_cost(1000), 2000) in (879, 880)
    on = _core.make_batch_scheduler("slo_triage").schedule(v, 1.0)
    off = _core.make_batch_scheduler("slo_triage", {"tpot_guard": False}).schedule(v, 1.0)
    assert [(i.request, i.tokens) for i in off.items] == [(0, 1), (1, 1999)]
    assert [i.request for i in on.items] == [0, 1] and on.items[1].tokens in (679, 680)
    exact = _core.make_batch_scheduler("slo_triage", {"margin": 0.0}).schedule(v, 1.0)
    assert exact.items[1].tokens in (879, 880)


def test_late_running_request_is_preempted_first():
    """KV for no more blocks: a running decode whose first token came late is the victim, not
    the newer on-time one that vLLM priority would preempt."""
    old, new = _state(0, 0.0, 16, gen=1), _state(1, 1.0, 32, gen=1)
    old.first_token, new.first_token = 5.0, 1.5  # old: TTFT 5 s > 1 s SLO; new: 0.5 s
    v = _view([old, new], [])
    v.kv_blocks_total, v.kv_blocks_free = 3, 0
    assert list(_core.make_batch_scheduler("vllm_priority").schedule(v, 6.0).preempt) == [1]
    assert list(_core.make_batch_scheduler("slo_triage").schedule(v, 6.0).preempt) == [0]


def test_triage_gains_under_overload_and_changes_nothing_when_light():
    w = workloads.with_priorities(workloads.sharegpt_like(rate=45, n=900, seed=1, ttft=1.5, tpot=0.1), seed=1)
    kw = dict(profile="ascend910b-qwen7b", instances=2, global_policy="least_outstanding")
    vp = simulate(w, batch_scheduler="vllm_priority", **kw).summary
    tr = simulate(w, batch_scheduler="slo_triage", **kw).summary
    assert tr["finished"] == vp["finished"] == len(w)  # every request answered
    assert tr["attainment"] > vp["attainment"] + 0.05, (tr["attainment"], vp["attainment"])
    light = workloads.with_priorities(workloads.sharegpt_like(rate=5, n=100, seed=1, ttft=1.5, tpot=0.1), seed=1)
    a = simulate(light, batch_scheduler="vllm_priority", **kw).summary["attainment"]
    b = simulate(light, batch_scheduler="slo_triage", **kw).summary["attainment"]
    assert math.isclose(a, b) and a > 0.95
