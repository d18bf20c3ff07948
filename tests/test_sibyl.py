"""SIBYL: C++ survival estimator and projected load against the
pure-Python reference (hypothesis), the policy through the GlobalPolicy interface, params."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import sibyl as ref

TOL = 1e-9


@settings(max_examples=60, deadline=None)
@given(
    bucket=st.integers(1, 200),
    alpha=st.floats(0.5, 0.999),
    max_len=st.integers(200, 5000),
    lens=st.lists(st.integers(0, 6000), max_size=80),
    queries=st.lists(st.floats(0, 7000, allow_nan=False), min_size=1, max_size=20),
)
def test_survival_matches_reference(bucket, alpha, max_len, lens, queries):
    if max_len < bucket:
        max_len = bucket
    c, p = _core.SurvivalEstimator(bucket, alpha, max_len), ref.SurvivalEstimator(bucket, alpha, max_len)
    for L in lens:
        c.observe(L)
        p.observe(L)
    assert c.values() == pytest.approx(p.s, abs=TOL)
    for q in queries:
        assert c.survival(q) == pytest.approx(p.survival(q), abs=TOL)
        assert c.conditional(q / 2, q) == pytest.approx(p.conditional(q / 2, q), abs=TOL)


def test_survival_semantics():
    e = _core.SurvivalEstimator(64, 0.99, 1024)
    assert e.survival(0) == e.survival(5000) == 1.0  # S(l) = 1 before any completion (docs/design.md)
    for _ in range(2000):  # long run: the global decay is renormalised, values stay exact
        e.observe(100)
    assert e.survival(64) == pytest.approx(1.0)
    assert e.survival(128) == pytest.approx(0.0, abs=1e-8)  # every bucket above L falls
    assert e.conditional(500, 600) == 1.0  # capped at 1 when S(l_now) ~ 0
    e.observe(5000)  # beyond max_len: the last bucket counts it
    assert e.survival(10_000) == pytest.approx(0.01, abs=1e-8)


def test_survival_bad_params():
    with pytest.raises(ValueError, match="bucket"):
        _core.SurvivalEstimator(0)
    with pytest.raises(ValueError, match="alpha"):
        _core.SurvivalEstimator(64, 1.0)
    with pytest.raises(ValueError, match="final_len"):
        _core.SurvivalEstimator().observe(-1)


OPTS = st.fixed_dictionaries(
    dict(
        prob=st.booleans(),
        type1=st.just(True),
        type2=st.booleans(),
        type3=st.booleans(),
        reqlevel=st.booleans(),
        bucket=st.sampled_from([16, 64, 128]),
    )
)
EVENT = st.tuples(
    st.sampled_from(["assign", "token", "handoff", "finish"]),
    st.integers(0, 30),
    st.integers(0, 5),
    st.integers(1, 2000),
    st.floats(0.0, 3.0),
)


@settings(max_examples=80, deadline=None)
@given(opts=OPTS, events=st.lists(EVENT, max_size=120), horizon=st.floats(0.0, 5.0))
def test_projected_load_matches_reference(opts, events, horizon):
    c, p = _core.SibylProjectedLoad(**opts), ref.ProjectedLoad(**opts)
    now, gen = 0.0, {}
    for kind, rid, inst, ln, dt in events:
        now += dt
        if kind == "assign" and not p.table.get(rid):
            c.assign(rid, inst, ln, now + dt)
            p.assign(rid, inst, ln, now + dt)
            gen[rid] = 1
        elif rid in p.table:
            if kind == "token":
                gen[rid] += ln % 40
                c.token(rid, gen[rid], now)
                p.token(rid, gen[rid], now)
            elif kind == "handoff":
                c.set_handoff(rid, now)
                p.set_handoff(rid, now)
            else:
                assert c.finish(rid) == p.finish(rid)
    assert len(c) == len(p.table)
    assert c.v_sys() == pytest.approx(p.v_sys(), rel=1e-9)
    tau = now + horizon
    insts = list(range(6))
    ci, cl = c.argmin(insts, now, tau)
    pi, pl = p.argmin(insts, now, tau)
    assert cl == pytest.approx(pl, rel=1e-9, abs=1e-6)
    for i in insts:
        assert c.terms(i, now, tau) == pytest.approx(p.terms(i, now, tau), rel=1e-9, abs=1e-6)
    gap = sorted(pl)[1] - sorted(pl)[0]
    if gap > 1e-6 * max(1.0, max(pl)):
        assert ci == pi  # same decision whenever the minimum is not a near-tie


def test_projection_types_by_hand():
    p = _core.SibylProjectedLoad(v_sys_init=10.0)
    p.assign(1, 0, 100, 0.0)  # will be active
    p.token(1, 1, 0.0)
    p.token(1, 21, 2.0)  # v_1 = 10 tok/s, l_now = 21
    p.assign(2, 0, 50, 1.0)  # pending, tau_k = 1 <= tau: Type 2
    p.assign(3, 0, 40, 4.0)  # pending, tau_k = 4 > tau = 3: Type 3
    t1, t2, t3 = p.terms(0, 2.0, 3.0)
    assert t1 == pytest.approx(100 + 21 + 10)  # Eq. 6 with S = 1 (no completion yet)
    assert t2 == pytest.approx(50 + 10 * 2.0)  # Eq. 7: g = v_sys (tau - tau_k)
    assert t3 == pytest.approx(max(0.0, 40 - 10 * 1.0))  # Eq. 8, not Alg. 1 line 17's l_in + gap
    q = _core.SibylProjectedLoad(v_sys_init=10.0, reqlevel=True)
    q.assign(3, 0, 40, 4.0)
    assert q.terms(0, 2.0, 3.0) == (0.0, 0.0, 1.0)
    with pytest.raises(KeyError):
        p.token(99, 1, 0.0)
    with pytest.raises(ValueError, match="already tracked"):
        p.assign(1, 0, 1, 0.0)


def views(n):
    return [s.InstanceView(i) for i in range(n)]


def _req(i, prompt=100, t=0.0):
    return s.Request(i, t, prompt)


def test_policy_spreads_concurrent_prefills():
    """Alg. 1: requests still in prefill (Type 2/3 shadows) count, so a burst spreads out,
    where ILS at prefill start (the paper's baseline) herds onto one idle instance."""
    pol = _core.make_global_policy("sibyl")
    ils = _core.make_global_policy("early_assign", {"policy": "least_outstanding"})
    assert pol.early_assignment() and ils.early_assignment()
    vs = views(4)
    got, got_ils = [], []
    for i in range(4):
        pol.submit(_req(i), 0.0, 0.5)
        got += [a.instance for a in pol.poll(0.0, vs)]
        ils.submit(_req(i), 0.0, 0.5)
        got_ils += [a.instance for a in ils.poll(0.0, vs)]
    assert sorted(got) == [0, 1, 2, 3]
    assert got_ils == [0, 0, 0, 0]


def test_policy_lifecycle_and_params():
    pol = _core.make_global_policy("sibyl", {"bucket": 32, "prob": 0, "handoff": "prefill"})
    assert pol.params()["handoff"] == "prefill" and pol.params()["bucket"] == 32
    vs = views(2)
    pol.submit(_req(1), 0.0, math.nan)
    (a,) = pol.poll(0.0, vs)
    pol.on_prefill_done(1, 7, 0.3)
    pol.on_token(1, a.instance, 1, 0.4)
    pol.on_token(1, a.instance, 5, 0.5)
    pol.on_finished(1, a.instance, 0.6)
    with pytest.raises(KeyError, match="unknown id 1"):  # finished already: unknown now
        pol.on_finished(1, a.instance, 0.6)
    assert pol.pending() == 0
    for bad, match in [
        ({"bucket": 0}, "bucket"),
        ({"alpha": 2.0}, "alpha"),
        ({"handoff": "x"}, "handoff"),
        ({"type1": 0, "type2": 0, "type3": 0}, "type"),
        ({"nope": 1}, "nope"),
        ({"v_sys_init": -1}, "v_sys_init"),
    ]:
        with pytest.raises(ValueError, match=match):
            _core.make_global_policy("sibyl", bad)
    with pytest.raises(ValueError, match="policy"):
        _core.make_global_policy("early_assign", {"policy": "sibyl"})
