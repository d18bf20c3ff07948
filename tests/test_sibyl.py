"""SIBYL: C++ survival estimator and projected load against the
pure-Python reference (hypothesis), the policy through the GlobalPolicy interface, params."""

import math
import random

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


def _plain_terms(slots, opts, est, vs, now, tau):
    """Eq. 6-8 summed over one instance's requests in the table's slot order, each term as
    the plain per-request form computes it (rate and l(now) from the request's own fields,
    S through the estimator's public lookups): the C++ table's sums must equal it exactly."""
    type1, type2, type3 = opts["type1"], opts["type2"], opts["type3"]
    prob, reqlevel = opts["prob"], opts["reqlevel"]
    s1 = s2 = s3 = 0.0
    for k in slots:
        lin = float(k["prompt_len"])
        if k["active"]:
            if not type1:
                continue
            l_now = float(k["generated"])
            dt = k["t_last"] - k["t0"]
            v = (k["generated"] - k["g0"]) / dt if (dt > 1e-9 and k["generated"] > k["g0"]) else vs
            l_tau = l_now + v * max(0.0, tau - now)
            m = 1.0 if reqlevel else lin + l_tau
            s1 += m * (est.conditional(l_now, l_tau) if prob else 1.0)
        else:
            t2 = k["tau"] <= tau
            g = vs * (tau - k["tau"])
            m = 1.0 if reqlevel else lin + g
            v2 = m * (est.survival(g) if prob else 1.0)
            pen = max(0.0, lin - vs * (k["tau"] - tau))
            v3 = (1.0 if pen > 0 else 0.0) if reqlevel else pen
            s2 += v2 if (t2 and type2) else 0.0
            s3 += v3 if (not t2 and type3) else 0.0
    return s1, s2, s3


def _replay(opts, events):
    """Applies (kind, id, instance, n, dt) events to the C++ table and mirrors its slots:
    per instance, requests in slot order (appended; a finish swap-removes)."""
    c = _core.SibylProjectedLoad(**opts)
    slots: dict[int, list] = {}
    where: dict[int, dict] = {}
    now = 0.0
    for kind, rid, inst, ln, dt in events:
        now += dt
        if kind == "assign" and rid not in where:
            c.assign(rid, inst, ln, now + dt)
            k = dict(
                id=rid, inst=inst, prompt_len=ln, tau=now + dt, active=False, g0=0, generated=0, t0=0.0, t_last=0.0
            )
            slots.setdefault(inst, []).append(k)
            where[rid] = k
        elif rid in where:
            k = where[rid]
            if kind == "token":
                gen = k["generated"] + ln % 40 if k["active"] else ln % 7
                c.token(rid, gen, now)
                if not k["active"]:
                    k.update(active=True, g0=gen, generated=gen, t0=now, t_last=now)
                else:
                    k["t_last"], k["generated"] = max(k["t_last"], now), max(k["generated"], gen)
            elif kind == "handoff":
                c.set_handoff(rid, now)
                if not k["active"]:
                    k["tau"] = now
            else:
                c.finish(rid)
                v = slots[k["inst"]]
                i = next(j for j, x in enumerate(v) if x["id"] == rid)
                v[i] = v[-1]  # the table's swap-remove
                v.pop()
                del where[rid]
    return c, slots, now


def _check_bit_for_bit(opts, events, horizon, n_inst):
    c, slots, now = _replay(opts, events)
    vs, tau = c.v_sys(), max(0.0, now + horizon)  # tau < now too: Eq. 6's max(0, tau - now)
    plain = [_plain_terms(slots.get(i, []), opts, c.estimator, vs, now, tau) for i in range(n_inst)]
    assert [c.terms(i, now, tau) for i in range(n_inst)] == plain
    loads = [sum(t) for t in plain]
    best, got = c.argmin(list(range(n_inst)), now, tau)
    assert got == loads and best == min(range(n_inst), key=lambda i: (loads[i], i))  # Alg. 1 line 20
    # The decision cuts each load once it reaches the least so far: still exactly this one.
    assert c.choose(list(range(n_inst)), now, tau) == best


@settings(max_examples=80, deadline=None)
@given(opts=OPTS, type1=st.booleans(), events=st.lists(EVENT, max_size=150), horizon=st.floats(-1.0, 5.0))
def test_projected_load_sums_are_the_plain_form_bit_for_bit(opts, type1, events, horizon):
    """The C++ table keeps per slot only what a decision reads (l_in, tau_k or l(now), v_k);
    its sums are the plain form's, same doubles in the same order (swap-remove slot order)."""
    opts = {**opts, "type1": type1}
    if not (opts["type1"] or opts["type2"] or opts["type3"]):
        opts = {**opts, "type3": True}
    _check_bit_for_bit(opts, events, horizon, 6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("prob,reqlevel", [(True, False), (False, False), (True, True), (False, True)])
def test_projected_load_bit_for_bit_on_long_tables(seed, prob, reqlevel):
    """Hundreds of requests per instance (sums long enough that another order would round
    differently, and a decision's sums long enough to be cut; request counts tie), with
    completions training the estimator, tokens and handoffs."""
    rng = random.Random(seed)
    kinds = ["assign"] * 6 + ["token"] * 4 + ["handoff", "finish"]
    events = [
        (rng.choice(kinds), rng.randrange(3000), rng.randrange(3), rng.randint(1, 2000), rng.uniform(0, 0.01))
        for _ in range(6000)
    ]
    opts = dict(prob=prob, reqlevel=reqlevel, type1=True, type2=True, type3=True, bucket=16)
    for horizon in (-0.5, 0.0, 2.0, 30.0):
        _check_bit_for_bit(opts, events, horizon, 3)


@pytest.mark.parametrize("prob,reqlevel", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("missing, chosen", [(None, 0), (2, 2), (1, 1), (0, 0)])
def test_argmin_on_cut_sums_chooses_as_full_sums(prob, reqlevel, missing, chosen):
    """A decision sums each load only until it reaches the least so far (checked every 256
    slots). Three instances with the same 257 requests in the same slots (equal loads, bit for
    bit: ties go to the first; the check at slot 256 sees all but the last term), one of them
    less its last request (a load a hair lower, found only at its sum's end)."""
    c = _core.SibylProjectedLoad(prob=prob, reqlevel=reqlevel, bucket=16)
    for n in range(300):  # completions train the estimator
        c.assign(10**6 + n, 5, 10, 0.0)
        c.token(10**6 + n, 1 + n % 200, 0.0)
        c.finish(10**6 + n)
    for inst in range(3):
        for j in range(257):
            if inst == missing and j == 256:
                continue
            rid = inst * 10_000 + j
            c.assign(rid, inst, 100 + j % 50, 1.0 + j * 1e-3)  # pending: Type 2 or 3 by tau
            if j % 5 == 0:
                c.token(rid, 1, 0.1)
                c.token(rid, 1 + j % 9, 0.4)  # active: Type 1
    best, loads = c.argmin([0, 1, 2], 0.5, 1.35)
    assert best == chosen and c.choose([0, 1, 2], 0.5, 1.35) == chosen
    if missing is None:
        assert loads[0] == loads[1] == loads[2]
    else:
        assert loads[missing] == min(loads) and loads.count(min(loads)) == 1


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
