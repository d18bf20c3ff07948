"""ProServe: SlideBatching (Alg. 1) C++ == reference on random views, feasible plans, the
urgent/normal partition by hand, GoRouting (Alg. 2) choices, and runs that finish."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from simkit import config, profile, requests
from slocore import _core
from slocore.reference import proserve as ref
from test_batch_baselines import feasible, views

COEF = dict(t_c=0.01, a_p=2e-8, b_p=1e-9, c_p=1e-4, a_d=1e-6, b_d=2e-3)


@st.composite
def slide_views(draw):
    v = draw(views())
    v.model = s.LatencyModel(s.LatencyCoeffs(**COEF))
    return v


slide_params = st.fixed_dictionaries(
    {
        "phi": st.sampled_from(["a", "c", "p"]),
        "gamma": st.floats(0, 3),
        "eta": st.floats(0.005, 0.5),
        "w_prefill": st.floats(0.1, 5),
        "order": st.sampled_from(["slide", "deadline", "density"]),
        "latency_aware": st.booleans(),
        "token_budget": st.integers(1, 2048),
    }
)


@settings(max_examples=150, deadline=None)
@given(slide_views(), slide_params, st.floats(0, 12))
def test_slide_batching_matches_reference_and_is_feasible(v, params, now):
    plan = _core.make_batch_scheduler("slide_batching", params).schedule(v, now)
    feasible(v, plan)
    items, pre = ref.slide_batching(v, now, ref.SlideParams(**params))
    assert [(i.request, i.tokens) for i in plan.items] == items
    assert list(plan.preempt) == pre


def st_(rid, prompt, computed=0, gen=0, arrival=0.0, ttft=1.0, tpot=0.1, weight=1.0):
    r = s.Request(rid, arrival, prompt, output_len=100, ttft=ttft, tpot=tpot, priority_weight=weight)
    return s.RequestState(r, computed, gen)


def engine(running=(), waiting=(), coef=COEF, budget=8192):
    v = s.InstanceView(0)
    v.running, v.waiting = list(running), list(waiting)
    v.kv_blocks_total = v.kv_blocks_free = 100_000
    v.max_batch_tokens = budget
    v.model = s.LatencyModel(s.LatencyCoeffs(**coef))
    return v


def plan(v, now=0.0, **params):
    p = _core.make_batch_scheduler("slide_batching", params).schedule(v, now)
    return [(i.request, i.tokens) for i in p.items]


def test_low_load_is_deadline_first_and_budget_is_the_tightest_deadline():
    # Two prompts, plenty of slack: NORMAL, ordered by remaining time; the budget (0.5 s,
    # r2's TTFT) holds both whole prompts.
    v = engine(waiting=[st_(1, 100, ttft=2.0), st_(2, 100, ttft=0.5)])
    assert plan(v) == [(2, 100), (1, 100)]


def test_high_load_takes_dense_high_priority_first_and_chunks_to_the_budget():
    # Budget = 0.05 s (r1's deadline); the queue needs far more, so all are URGENT and go by
    # density w/exec: the weight-2 short prompt first; the rest is a chunk that fits.
    w = [st_(1, 2000, ttft=0.05), st_(2, 100, ttft=0.3, weight=2.0), st_(3, 100, ttft=0.3)]
    v = engine(waiting=w)
    out = plan(v)
    assert out[0] == (2, 100) and out[1] == (3, 100)
    m = ref.Model(v.model)
    used = m.overhead() + 2 * m.prefill(100, 0)
    assert out[2][0] == 1 and m.prefill(out[2][1], 0) <= 0.05 - used + 1e-12 < m.prefill(out[2][1] + 1, 0)
    # Ablation "deadline": EDF order regardless of load.
    assert plan(v, order="deadline")[0][0] == 1


def test_decodes_are_kept_and_gamma_zero_means_all_normal():
    run = [st_(1, 50, 50, 1, ttft=0.2, tpot=0.05), st_(2, 50, 50, 1, ttft=0.2, tpot=0.5)]
    v = engine(running=run, waiting=[st_(3, 300, ttft=5.0)])
    out = plan(v, gamma=0.0)
    assert out[:2] == [(1, 1), (2, 1)] and out[2][0] == 3


def test_bad_params_are_named():
    for bad, field in (
        ({"gamma": -1}, "gamma"),
        ({"eta": 0}, "eta"),
        ({"phi": "x"}, "phi"),
        ({"order": "fifo"}, "order"),
        ({"token_budget": 0}, "token_budget"),
        ({"zz": 1}, "zz"),
    ):
        with pytest.raises(ValueError, match=field):
            _core.make_batch_scheduler("slide_batching", bad)


@pytest.mark.parametrize("params", [{}, {"phi": "c"}, {"order": "density"}, {"latency_aware": False}])
def test_slide_batching_finishes_a_kv_pressured_run(params):
    reqs = requests(150, rate=40, prompt=(32, 300), output=(5, 60))
    cfg = config(profile(kv_blocks=60), instances=2, sched=lambda: _core.make_batch_scheduler("slide_batching", params))
    res = _core.simulate(reqs, cfg)
    assert res.stats["plan_violations"] == 0 and res.stats["stalled"] == 0
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)


# --- GoRouting (Alg. 2) -------------------------------------------------------------------


def inst(i, coef=COEF, free=1000):
    v = s.InstanceView(i)
    v.kv_blocks_total, v.kv_blocks_free = 2000, free
    v.model = s.LatencyModel(s.LatencyCoeffs(**coef))
    return v


def req(rid, prompt, arrival=0.0, ttft=1.0, w=1.0):
    return s.Request(rid, arrival, prompt, output_len=10, ttft=ttft, tpot=0.1, priority_weight=w)


def route(policy, r, views, now=0.0):
    policy.submit(r, now)
    return {a.request: a.instance for a in policy.poll(now, views)}[r.id]


def test_goroute_pd_light_load_goes_to_the_idlest_and_tracks_the_queue():
    g = _core.make_global_policy("goroute", {"mode": "pd"})
    views = [inst(0), inst(1)]
    assert route(g, req(1, 2000), views) == 0  # both idle: the first of the lightest
    assert route(g, req(2, 100), views) == 1  # 0 now holds a long prefill
    g.on_prefill_done(1, 0, 0.5)  # PrefillQueueMap[0].remove(r1)
    assert route(g, req(3, 100, arrival=0.5), views, now=0.5) == 0


def test_goroute_pd_consolidates_when_every_candidate_still_meets_ttft():
    # Light threshold mu = 0: no instance is "light", so Alg. 2 line 15 picks the busiest
    # instance that stays below lambda * TTFT, keeping the idle one for later long requests.
    g = _core.make_global_policy("goroute", {"mode": "pd", "mu": 0.0, "lambda": 0.9})
    views = [inst(0), inst(1)]
    assert route(g, req(1, 300), views) == 0
    assert route(g, req(2, 300), views) == 0
    assert route(g, req(3, 300, ttft=0.07), views) == 1  # on 0 it would miss its TTFT


def test_goroute_decode_mode_takes_the_most_free_kv():
    g = _core.make_global_policy("goroute", {"mode": "decode"})
    assert route(g, req(1, 10), [inst(0, free=10), inst(1, free=500), inst(2, free=20)]) == 1


def test_goroute_bad_params():
    for bad, field in (
        ({"mode": "x"}, "mode"),
        ({"alpha": 2}, "alpha"),
        ({"mu": 0.8, "lambda": 0.5}, "lambda"),
        ({"fallback": "rr"}, "fallback"),
        ({"gain_phi": "b"}, "gain_phi"),
    ):
        with pytest.raises(ValueError, match=field):
            _core.make_global_policy("goroute", bad)


@pytest.mark.parametrize("mode", ["colocated", "pd"])
def test_goroute_finishes_runs(mode):
    reqs = requests(200, rate=40, prompt=(32, 300), output=(1, 40))
    if mode == "colocated":
        cfg = config(
            profile(),
            instances=3,
            policy=_core.make_global_policy("goroute"),
            sched=lambda: _core.make_batch_scheduler("slide_batching"),
        )
    else:
        cfg = config(
            profile(),
            disaggregated=True,
            prefill_instances=2,
            decode_instances=2,
            prefill_policy=_core.make_global_policy("goroute", {"mode": "pd"}),
            decode_policy=_core.make_global_policy("goroute", {"mode": "decode"}),
            sched=lambda: _core.make_batch_scheduler("sarathi_fcfs"),
        )
    res = _core.simulate(reqs, cfg)
    assert res.stats["stalled"] == 0 and res.recorder.total_tokens == sum(r.output_len for r in reqs)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["colocated", "pd", "colocated_c"]),
    st.lists(
        st.tuples(
            st.integers(16, 3000),
            st.floats(0.05, 3.0),
            st.sampled_from([1.0, 2.0]),
            st.integers(0, 3),
            st.floats(0, 0.3),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 6),
)
def test_goroute_matches_reference(mode, events, n_inst):
    # Random arrivals; after each, the oldest queued request may get its first token.
    phi = "c" if mode.endswith("_c") else "a"
    mode = mode.removesuffix("_c")
    g = _core.make_global_policy("goroute", {"mode": mode, "gain_phi": phi})
    r_ = ref.GoRoute(ref.GoRouteParams(mode=mode, gain_phi=phi))
    views = [inst(i, coef=dict(COEF, t_c=0.01 * (1 + i % 3))) for i in range(n_inst)]
    now, where = 0.0, {}
    for rid, (prompt, ttft, w, done, dt) in enumerate(events):
        now += dt
        r = s.Request(rid, now, prompt, output_len=10, ttft=ttft, tpot=0.1, priority_weight=w)
        got = route(g, r, views, now)
        assert views[r_.choose(r, now, views)].id == got
        where[rid] = got
        for old in list(where)[:done]:  # first tokens (colocated: decoding), then finishes
            g.on_token(old, where[old], 1, now)
            r_.first_token(old, where[old], now)
            if done > 2:
                g.on_finished(old, where[old], now)
                r_.finished(old, where[old], now)
                del where[old]


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["colocated", "pd"]),
    st.lists(
        st.tuples(st.integers(16, 3000), st.floats(0.05, 3.0), st.sampled_from([1.0, 2.0]), st.integers(0, 9)),
        min_size=20,
        max_size=150,
    ),
    st.integers(1, 3),
    st.lists(st.floats(0.5, 2.0), min_size=1, max_size=4),
)
def test_goroute_matches_reference_on_long_queues(mode, events, n_inst, betas):
    # Queues far longer than their TTFTs allow (the kept deadline order, the on-time search,
    # the P/D walk's early stop) and the online correction changing the prefill costs.
    g = _core.make_global_policy("goroute", {"mode": mode})
    r_ = ref.GoRoute(ref.GoRouteParams(mode=mode))
    views = [inst(i, coef=dict(COEF, t_c=0.01 * (1 + i % 3))) for i in range(n_inst)]
    now, where = 0.0, {}
    for rid, (prompt, ttft, w, k) in enumerate(events):
        now += 0.01
        if k == 9:  # a correction on one instance's model
            v = views[rid % n_inst]
            m = v.model
            m.set_correction(betas[rid % len(betas)])
            v.model = m
        r = s.Request(rid, now, prompt, output_len=10, ttft=ttft, tpot=0.1, priority_weight=w)
        got = route(g, r, views, now)
        assert views[r_.choose(r, now, views)].id == got
        where[rid] = got
        if k == 0:  # the oldest queued request gets its first token
            old = next(iter(where))
            g.on_token(old, where[old], 1, now)
            r_.first_token(old, where[old], now)
            del where[old]


def test_tdg_helpers_and_max_chunk():
    r = s.Request(1, 2.0, 100, output_len=5, ttft=1.0, tpot=0.1, priority_weight=2.0)
    assert _core.tdg_token_deadline(r, 1) == 3.0 and _core.tdg_token_deadline(r, 4) == pytest.approx(3.3)
    assert _core.tdg_token_weight(r, 1, 3.0, 1.0) == 6.0 and _core.tdg_token_weight(r, 2, 3.0, 1.0) == 2.0
    with pytest.raises(ValueError, match="i"):
        _core.tdg_token_deadline(r, 0)
    m = s.LatencyModel(s.LatencyCoeffs(**COEF))
    st0 = s.RequestState(r, 0, 0)
    k = _core.slide_max_chunk(m, st0, 0.005)
    assert m.prefill_cost(k, 0) <= 0.005 < m.prefill_cost(k + 1, 0)
    assert k == ref.max_chunk(ref.Model(m), st0, 0.005)
    assert _core.slide_max_chunk(m, st0, 10.0) == 100 and _core.slide_max_chunk(m, st0, 0.0) == 0
