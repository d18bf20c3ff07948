"""Random sequences of calls over the whole Python API with hostile values (NaN, inf, negative,
zero, huge, duplicate and unknown ids). The contract: every call returns or raises ValueError,
KeyError, TypeError or IndexError with a message; nothing crashes (CI also runs this file
against an ASan/UBSan build of the extension, see .ci/run).

SLOCORE_FUZZ_EXAMPLES=N sets the number of hypothesis examples (default 150, about 20 calls
each); `pytest -s` prints the number of calls made.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core

EXAMPLES = int(os.environ.get("SLOCORE_FUZZ_EXAMPLES", "150"))
CLEAN = (ValueError, KeyError, TypeError, IndexError)
CALLS = {"n": 0, "errors": 0}

NASTY_FLOATS = [math.nan, math.inf, -math.inf, -1.0, 0.0, -0.0, 1e-300, 1e300, 5e-324]
NASTY_INTS = [-1, 0, -(2**31), 2**31 - 1, 2**40, 2**41, 2**62, 2**63 - 1, -(2**63), 2**64]


def floats(lo=0.0, hi=100.0):
    return st.one_of(st.floats(lo, hi), st.floats(lo, hi), st.sampled_from(NASTY_FLOATS))


def ints(lo=0, hi=50):
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), st.sampled_from(NASTY_INTS))


IDS = st.one_of(st.integers(0, 12), st.sampled_from([-1, 2**62, 2**63 - 1]))
TIMES = floats(0.0, 50.0)


def call(fn, *args, **kw):
    """One API call: a result or a clean, non-empty error; anything else fails the test."""
    CALLS["n"] += 1
    try:
        return fn(*args, **kw)
    except CLEAN as e:
        CALLS["errors"] += 1
        assert str(e), f"{type(e).__name__} without a message from {getattr(fn, '__name__', fn)}"
        return None


@st.composite
def requests(draw, rid=IDS):
    kw = {}
    if draw(st.booleans()):
        kw["ttft"] = draw(floats(0.0, 5.0))
        kw["tpot"] = draw(floats(0.0, 0.5))
    if draw(st.integers(0, 3)) == 0:
        kw["deadline"] = draw(floats(0.0, 30.0))
    for f in ("output_len", "expected_output_len", "max_output_len"):
        if draw(st.booleans()):
            kw[f] = draw(ints(0, 300))
    if draw(st.integers(0, 4)) == 0:
        kw["priority"] = draw(ints(0, 4))
        kw["priority_weight"] = draw(floats(0.0, 4.0))
        kw["utility"] = draw(floats(0.0, 4.0))
    kw["task"] = draw(st.sampled_from(["", "a", "b"]))
    r = call(s.Request, draw(rid), draw(floats(0.0, 20.0)), draw(ints(1, 400)), **kw)
    if r is not None and draw(st.integers(0, 9)) == 0:  # mutated after construction
        call(setattr, r, draw(st.sampled_from(["prompt_len", "id", "priority"])), draw(ints(-5, 5)))
    return r


@st.composite
def states(draw):
    r = draw(requests(rid=st.integers(0, 12)))
    if r is None:
        return None
    gen = draw(st.one_of(st.integers(0, 50), st.sampled_from(NASTY_INTS)))
    top = max(0, min(r.prompt_len, 2**40) + max(0, min(gen, 2**40)))
    computed = draw(st.one_of(st.integers(0, top), st.sampled_from(NASTY_INTS)))
    return call(s.RequestState, r, computed, gen)


@st.composite
def models(draw):
    if draw(st.booleans()):
        return s.LatencyModel()
    c = call(s.LatencyCoeffs, **{k: draw(floats(0.0, 1e-3)) for k in ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d")})
    return call(s.LatencyModel, c, draw(floats(0.0, 1.0))) if c is not None else None


@st.composite
def views(draw, vid=None):
    v = s.InstanceView(
        draw(vid or st.integers(0, 3)), draw(st.sampled_from([s.Role.COLOCATED, s.Role.PREFILL, s.Role.DECODE]))
    )
    if draw(st.integers(0, 3)) == 0:  # a hostile field
        field = draw(
            st.sampled_from(
                ["block_size", "kv_blocks_total", "kv_blocks_free", "max_batch_tokens", "max_num_seqs", "id"]
            )
        )
        call(setattr, v, field, draw(ints(-5, 5)))
    total = draw(st.integers(0, 5000))
    call(setattr, v, "kv_blocks_total", total)
    call(setattr, v, "kv_blocks_free", draw(st.integers(0, total)))
    call(setattr, v, "busy_until", draw(TIMES))
    call(setattr, v, "accepting", draw(st.booleans()))
    m = draw(models())
    if m is not None:
        v.model = m
    if draw(st.booleans()):
        v.max_batch_tokens = draw(st.integers(1, 4096))
        v.max_num_seqs = draw(st.integers(1, 64))
    for q in ("running", "waiting"):
        sts = [x for x in draw(st.lists(states(), max_size=5)) if x is not None]
        setattr(v, q, sts)
    return v


VIEWS = st.lists(views(), max_size=4)


def op_global_policy(data, p, ids):
    kind = data.draw(
        st.sampled_from(["submit", "poll", "prefill", "token", "finished", "added", "removed", "query", "hfx"])
    )
    now = data.draw(TIMES)
    rid = data.draw(st.one_of(st.sampled_from(ids or [0]), IDS))
    inst = data.draw(IDS)
    if kind == "submit":
        r = data.draw(requests())
        if r is not None:
            call(p.submit, r, now, data.draw(st.one_of(st.just(math.nan), TIMES)))
            ids.append(r.id)
    elif kind == "poll":
        out = call(p.poll, now, data.draw(VIEWS))
        for a in out or []:
            assert isinstance(a.request, int) and isinstance(a.instance, int)
    elif kind == "prefill":
        call(p.on_prefill_done, rid, inst, now)
    elif kind == "token":
        call(p.on_token, rid, inst, data.draw(ints(0, 50)), now)
    elif kind == "finished":
        call(p.on_finished, rid, inst, now)
    elif kind == "added":
        call(p.on_instance_added, inst, s.Role.COLOCATED, now)
    elif kind == "removed":
        call(p.on_instance_removed, inst, now)
    elif kind == "query":
        for f in (p.pending, p.next_wakeup, p.early_assignment, p.params, p.name):
            call(f)
    else:
        fn = data.draw(st.sampled_from([_core.hfx_maturity, _core.hfx_last_budget]))
        call(fn, p, inst)
        call(_core.hfx_assigned_slos, p)


def op_batch_scheduler(data, b):
    v = data.draw(views())
    now = data.draw(TIMES)
    kind = data.draw(st.sampled_from(["schedule", "schedule", "done", "finished"]))
    if kind == "schedule":
        plan = call(b.schedule, v, now)
        if plan is not None:
            assert all(isinstance(it.tokens, int) for it in plan.items)
    elif kind == "done":
        items = [
            call(s.ScheduledItem, data.draw(IDS), data.draw(ints(0, 64))) for _ in range(data.draw(st.integers(0, 3)))
        ]
        plan = s.BatchPlan([it for it in items if it is not None], [data.draw(IDS)] if data.draw(st.booleans()) else [])
        call(b.on_batch_done, v, plan, data.draw(floats(0.0, 1.0)), data.draw(floats(0.0, 1.0)), now)
    else:
        call(b.on_finished, data.draw(IDS), now)


def op_scaler(data, sc, ids):
    kind = data.draw(st.sampled_from(["arrival", "first", "finished", "decide", "indicators"]))
    now = data.draw(TIMES)
    rid = data.draw(st.one_of(st.sampled_from(ids or [0]), IDS))
    if kind == "arrival":
        r = data.draw(requests())
        if r is not None:
            call(sc.on_arrival, r, now)
            ids.append(r.id)
    elif kind == "first":
        call(sc.on_first_token, rid, now)
    elif kind == "finished":
        call(sc.on_finished, rid, now)
    elif kind == "decide":
        for d in call(sc.decide, now, data.draw(VIEWS)) or []:
            assert isinstance(d.instance, int)
    else:
        call(_core.hfx_scaler_indicators, sc, data.draw(ints(-1, 3)), now, data.draw(VIEWS))
    call(sc.interval)


def op_view(data):
    v = data.draw(views())
    call(v.validate)
    call(v.blocks_for, data.draw(ints(0, 5000)))
    st_ = data.draw(states())
    if st_ is not None:
        call(v.blocks_needed, st_, data.draw(ints(0, 100)), data.draw(st.booleans()))
        call(_core.slide_max_chunk, v.model, st_, data.draw(floats(-1.0, 1.0)))
        call(_core.tdg_token_deadline, st_.request, data.draw(ints(0, 10)))
        call(_core.tdg_token_weight, st_.request, data.draw(ints(0, 10)), data.draw(floats()), data.draw(floats()))
    call(_core.hfx_kv_load, v)
    assert isinstance(v.kv_utilization, float)


def op_slice(data):
    rates = data.draw(st.lists(st.one_of(st.integers(1, 40), st.sampled_from(NASTY_INTS)), max_size=6))
    m = call(s.DecodeMask, rates, data.draw(st.booleans()))
    if m is not None:
        call(m.row_task, data.draw(ints(0, 8)))
        call(m.at, data.draw(ints(0, 8)), data.draw(ints(0, 50)))
        call(m.column, data.draw(ints(0, 50)))
    curve = call(s.BatchLatencyCurve, [1.0, 2.0, 4.0], [data.draw(floats(0.0, 0.1)), 0.2, 0.3])
    curve = curve or s.BatchLatencyCurve([1.0, 2.0], [0.01, 0.02])
    call(curve, data.draw(floats(-2.0, 10.0)))
    if m is not None:
        call(m.period, curve)
    call(_core.slice_period_eq7, sorted(rates, reverse=True) if data.draw(st.booleans()) else rates, curve)
    tp = data.draw(st.lists(floats(0.0, 1.0), max_size=6))
    call(
        s.select_slice_tasks,
        tp,
        data.draw(st.lists(floats(0.0, 4.0), min_size=len(tp), max_size=len(tp))),
        curve,
        data.draw(floats(0.0, 2.0)),
        data.draw(st.booleans()),
    )
    call(_core.slice_rate, data.draw(floats(0.0, 1.0)))
    call(_core.slice_utility_rate, data.draw(floats()), data.draw(floats(0.0, 1.0)))


def op_models(data):
    m = data.draw(models()) or s.LatencyModel()
    call(m.prefill_cost, data.draw(ints(0, 4096)), data.draw(ints(0, 4096)))
    call(m.decode_cost, data.draw(ints(0, 4096)))
    items = [
        call(s.BatchItem, data.draw(ints(0, 512)), data.draw(ints(0, 4096)), data.draw(st.booleans()))
        for _ in range(data.draw(st.integers(0, 3)))
    ]
    t = call(m.batch_time, [it for it in items if it is not None])
    assert t is None or t >= 0
    call(m.stage_prefill, data.draw(floats(-10, 1e4)), data.draw(floats(-10, 1e6)))
    call(m.stage_decode, data.draw(floats(-10, 1e4)), data.draw(floats(-10, 64)))
    call(m.observe, data.draw(floats(0.0, 1.0)), data.draw(floats(0.0, 1.0)))
    call(m.update)
    call(m.set_correction, data.draw(floats(0.0, 3.0)))
    call(s.BatchLatencyCurve.from_model, m, data.draw(ints(0, 4096)), data.draw(ints(0, 64)))
    tc = call(
        s.ThroughputCurve,
        data.draw(floats(-1, 1)),
        data.draw(floats(0, 100)),
        data.draw(floats(0, 10)),
        data.draw(floats(0.0, 2.0)),
    )
    if tc is not None:
        call(tc.total, data.draw(floats(-1, 300)))
        call(tc.per_request, data.draw(floats(-1, 300)))
    call(_core.hfx_token_budget, *(data.draw(floats(0.0, 2.0)) for _ in range(5)))
    call(_core.hfx_admission_p, *(data.draw(floats(0.0, 10.0)) for _ in range(6)))
    call(_core.hfx_maturity_time, *(data.draw(floats(0.0, 2.0)) for _ in range(4)))


def op_sibyl(data):
    est = call(
        _core.SurvivalEstimator,
        data.draw(ints(1, 128)),
        data.draw(floats(0.0, 1.0)),
        data.draw(st.one_of(st.integers(1, 4096), st.sampled_from(NASTY_INTS))),
    )
    if est is not None:
        for _ in range(data.draw(st.integers(0, 5))):
            call(est.observe, data.draw(ints(0, 5000)))
        call(est.survival, data.draw(floats(-5.0, 5000.0)))
        call(est.conditional, data.draw(floats(-5.0, 5000.0)), data.draw(floats(-5.0, 5000.0)))
    pl = call(
        _core.SibylProjectedLoad,
        bucket=data.draw(ints(1, 64)),
        max_len=data.draw(ints(1, 4096)),
        v_sys_init=data.draw(floats(0.0, 60.0)),
    )
    if pl is not None:
        for _ in range(data.draw(st.integers(0, 6))):
            rid, inst, t = data.draw(IDS), data.draw(IDS), data.draw(TIMES)
            f = data.draw(st.sampled_from(["assign", "handoff", "token", "finish", "forget", "load", "argmin"]))
            if f == "assign":
                call(pl.assign, rid, inst, data.draw(ints(0, 500)), t)
            elif f == "handoff":
                call(pl.set_handoff, rid, t)
            elif f == "token":
                call(pl.token, rid, data.draw(ints(0, 500)), t)
            elif f in ("finish", "forget"):
                call(getattr(pl, f), rid)
            elif f == "load":
                call(pl.load, inst, t, data.draw(TIMES))
                call(pl.terms, inst, t, data.draw(TIMES))
            else:
                insts, tau = [data.draw(IDS) for _ in range(3)], data.draw(TIMES)
                call(pl.argmin, insts, t, tau)
                call(pl.choose, insts, t, tau)


def op_recorder(data, rec):
    r = data.draw(requests())
    if r is not None:
        call(rec.add, r)
    rid, t = data.draw(IDS), data.draw(TIMES)
    f = data.draw(st.sampled_from(["token", "finish", "reject", "get", "time"]))
    if f == "token":
        call(rec.token, rid, t, data.draw(IDS))
    elif f == "finish":
        call(rec.finish, rid, t)
    elif f == "reject":
        call(rec.reject, rid, t, "fuzz")
    elif f == "get":
        got = call(rec.get, rid)
        if got is not None:
            call(s.request_metrics, got)
    else:
        call(rec.add_instance_time, data.draw(floats(-1.0, 10.0)))
    opt = call(
        s.MetricsOptions, data.draw(floats(0.0, 2.0)), 1.0, 0.05, data.draw(st.lists(floats(0.0, 1.0), max_size=3))
    )
    call(s.summarize, rec, opt or s.MetricsOptions())


def op_mapper(data):
    pm = call(_core.PriorityMapper, window=data.draw(ints(1, 8)), spread=data.draw(floats(0.0, 1.0)))
    if pm is None:
        return
    for _ in range(data.draw(st.integers(0, 6))):
        pr = data.draw(ints(-1, 4))
        f = data.draw(st.sampled_from(["map", "record", "dispatch", "bounds"]))
        if f == "map":
            call(pm.map, pr, data.draw(st.booleans()))
        elif f == "record":
            call(pm.record, pr, data.draw(floats()), data.draw(floats()), data.draw(floats()))
        elif f == "dispatch":
            call(pm.on_dispatch, pr, data.draw(floats()))
        else:
            call(pm.bounds_ttft, pr)
            call(pm.bounds_tpot, pr)
            call(pm.index, pr)


def op_columns(data):
    n = data.draw(st.integers(0, 4))
    col = lambda strat: np.array([data.draw(strat) for _ in range(n)])  # noqa: E731
    call(
        _core.requests_from_columns,
        col(IDS),
        col(TIMES),
        col(ints(1, 100)),
        col(ints(1, 100)),
        col(floats(0.0, 2.0)),
        col(floats(0.0, 1.0)),
        col(st.just(math.nan)),
        col(ints(0, 3)),
        col(floats(0.0, 2.0)),
        col(floats(0.0, 2.0)),
        col(ints(0, 2)),
        ["a", "b"],
    )
    k = data.draw(st.integers(1, 3))
    X = [[data.draw(floats(0.0, 100.0)) for _ in range(k)] for _ in range(data.draw(st.integers(0, 5)))]
    call(s.fit_relative_least_squares, X, [data.draw(floats(0.0, 10.0)) for _ in X])


class PyPolicy(s.GlobalPolicy):
    """A careless Python policy: places on a random view, sometimes on ids that do not exist."""

    def __init__(self, rng):
        super().__init__()
        self.rng, self.q = rng, []

    def name(self):
        return "py_fuzz"

    def submit(self, r, now, expected_handoff=math.nan):
        self.q.append(r.id)

    def poll(self, now, views):
        out = []
        while self.q and views:
            rid = self.q.pop(0) if self.rng.random() > 0.05 else int(self.rng.integers(-2, 100))
            out.append(s.Assignment(rid, views[int(self.rng.integers(len(views)))].id))
        return out

    def pending(self):
        return len(self.q)


class PyScheduler(s.BatchScheduler):
    """A careless Python scheduler: random requests of the view with random token counts."""

    def __init__(self, rng):
        super().__init__()
        self.rng = rng

    def name(self):
        return "py_fuzz"

    def schedule(self, v, now):
        reqs = list(v.running) + list(v.waiting)
        items = [s.ScheduledItem(x.request.id, int(self.rng.integers(-1, 80))) for x in reqs if self.rng.random() < 0.8]
        pre = [x.request.id for x in v.running if self.rng.random() < 0.05]
        return s.BatchPlan(items, pre)


class PyScaler(s.Scaler):
    """A careless Python scaler: random decisions on random instance ids."""

    def __init__(self, rng):
        super().__init__()
        self.rng = rng

    def name(self):
        return "py_fuzz"

    def decide(self, now, views):
        act = [s.ScaleAction.SCALE_OUT, s.ScaleAction.SCALE_IN, s.ScaleAction.SWITCH_ROLE]
        roles = [s.Role.COLOCATED, s.Role.PREFILL, s.Role.DECODE]
        return [
            s.ScaleDecision(
                act[int(self.rng.integers(3))], roles[int(self.rng.integers(3))], int(self.rng.integers(-1, 6))
            )
            for _ in range(int(self.rng.integers(0, 2)))
        ]


def op_simulate(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    prof = s.HardwareProfile()
    prof.name = "fuzz"
    prof.coeffs = s.LatencyCoeffs(t_c=data.draw(st.floats(1e-4, 0.05)), c_p=1e-4, a_d=1e-7, b_d=1e-4)
    prof.kv_blocks = data.draw(st.sampled_from([1, 4, 64, 10_000]))
    prof.block_size = data.draw(st.sampled_from([1, 16]))
    prof.kv_bytes_per_token, prof.kv_bandwidth_bytes_per_s, prof.kv_fixed_s = 1e5, 1e9, 0.001
    if data.draw(st.booleans()):
        prof.tps = s.TpsQuadratic(-0.01, 30.0, 10.0)
    cfg = s.SimConfig()
    cfg.profile = prof
    cfg.disaggregated = data.draw(st.booleans())
    cfg.instances = data.draw(st.one_of(st.integers(1, 3), st.sampled_from([0, -1, 2**31 - 1])))
    cfg.prefill_instances, cfg.decode_instances = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    cfg.max_instances = data.draw(st.integers(0, 4))
    cfg.max_num_seqs = data.draw(st.sampled_from([1, 2, 256]))
    cfg.max_batch_tokens = data.draw(st.sampled_from([1, 16, 2048]))
    cfg.noise_sigma = data.draw(st.sampled_from([0.0, 0.3]))
    cfg.processor_sharing = data.draw(st.booleans())
    cfg.cold_start_s = data.draw(st.sampled_from([0.0, 1.0]))
    cfg.timeline_interval_s = data.draw(st.sampled_from([1.0, 0.5, 1e-9]))
    cfg.stall_timeout_s = 30.0
    cfg.max_time = data.draw(st.sampled_from([math.inf, 50.0]))
    pol = lambda: data.draw(st.sampled_from(s.global_policy_names() + ["py"]))  # noqa: E731
    mk = lambda n: PyPolicy(rng) if n == "py" else s.make_global_policy(n)  # noqa: E731
    if cfg.disaggregated:
        cfg.prefill_policy, cfg.decode_policy = mk(pol()), mk(pol())
    else:
        cfg.global_policy = mk(pol())
    sched = data.draw(st.sampled_from(s.batch_scheduler_names() + ["py"]))
    cfg.batch_scheduler = (lambda: PyScheduler(rng)) if sched == "py" else (lambda: s.make_batch_scheduler(sched))
    scaler = data.draw(st.sampled_from([None, "py"] + s.scaler_names()))
    if scaler is not None:
        cfg.scaler = PyScaler(rng) if scaler == "py" else s.make_scaler(scaler)
    n = data.draw(st.integers(0, 8))
    arrival = np.sort(rng.uniform(0, 5, n))
    reqs = call(
        _core.requests_from_columns,
        np.arange(n),
        arrival,
        rng.integers(1, 300, n),
        rng.integers(1, 40, n),
        np.full(n, 2.0),
        np.full(n, 0.2),
        np.full(n, np.nan),
        rng.integers(0, 3, n),
        np.ones(n),
        np.ones(n),
        np.zeros(n, dtype=np.int64),
        ["t"],
    )
    res = call(_core.simulate, reqs or [], cfg)
    if res is not None:  # every request accounted for, once
        assert sorted(r.request.id for r in res.recorder.records()) == list(range(n))
        call(s.summarize, res.recorder)


# No shrinking: a failure prints its draws; shrinking a long call sequence takes minutes.
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(st.data())
def test_random_call_sequences_never_crash(data):
    pol = call(s.make_global_policy, data.draw(st.sampled_from(s.global_policy_names())))
    sched = call(s.make_batch_scheduler, data.draw(st.sampled_from(s.batch_scheduler_names())))
    scaler = call(s.make_scaler, data.draw(st.sampled_from(s.scaler_names())))
    rec = s.Recorder()
    pol_ids, sc_ids = [], []
    for _ in range(data.draw(st.integers(5, 30))):
        kind = data.draw(
            st.sampled_from(
                ["policy"] * 4
                + ["sched"] * 2
                + ["scaler"] * 2
                + ["view", "slice", "models", "sibyl", "recorder", "mapper", "columns", "simulate"]
            )
        )
        if kind == "policy":
            op_global_policy(data, pol, pol_ids)
        elif kind == "sched":
            op_batch_scheduler(data, sched)
        elif kind == "scaler":
            op_scaler(data, scaler, sc_ids)
        elif kind == "recorder":
            op_recorder(data, rec)
        elif kind == "simulate":
            op_simulate(data)
        else:
            globals()[f"op_{kind}"](data)


@pytest.mark.parametrize("name", s.global_policy_names())
def test_every_policy_refuses_duplicate_unknown_ids_and_bad_times(name):
    p = s.make_global_policy(name)
    r = s.Request(1, 0.0, 10, ttft=1.0, tpot=0.1)
    p.submit(r, 0.0)
    with pytest.raises(ValueError, match="request.id: duplicate id 1"):
        p.submit(r, 0.0)
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError, match="now"):
            p.poll(bad, [s.InstanceView(0)])
    with pytest.raises(KeyError, match="unknown id 99"):
        p.on_finished(99, 0, 1.0)
    with pytest.raises(KeyError, match="unknown id 99"):
        p.on_token(99, 0, 1, 1.0)
    bad_view = s.InstanceView(0)
    bad_view.block_size = 0
    with pytest.raises(ValueError, match="block_size"):
        p.poll(1.0, [bad_view])
    with pytest.raises(ValueError, match="views: duplicate instance id 0"):
        p.poll(1.0, [s.InstanceView(0), s.InstanceView(0)])


@pytest.mark.parametrize("name", s.batch_scheduler_names())
def test_every_batch_scheduler_refuses_a_bad_view_by_field(name):
    """The boundary check of a view (every call from Python): a request id twice across
    running and waiting, a token count past 2^40 (before any sum overflows), computed past
    the request's tokens; each names the field."""
    r, q = s.Request(1, 0.0, 10, ttft=1.0, tpot=0.1), s.Request(2, 0.0, 10, ttft=1.0, tpot=0.1)
    cases = [
        ([s.RequestState(r, 10, 1)], [s.RequestState(r)], "request.id: duplicate id 1"),
        ([], [s.RequestState(r), s.RequestState(q, 0, 2**62)], "generated: must be in"),
        ([], [s.RequestState(q, 0, -1)], "generated: must be in"),
        ([s.RequestState(q, 12, 1)], [], "computed: must be in"),
    ]
    for running, waiting, match in cases:
        v = s.InstanceView(0)
        v.kv_blocks_total = v.kv_blocks_free = 100
        v.running, v.waiting = running, waiting
        with pytest.raises(ValueError, match=match):
            s.make_batch_scheduler(name).schedule(v, 1.0)


def test_issue_reproducers_raise_clean_errors():
    with pytest.raises(IndexError, match="row"):
        s.DecodeMask([]).row_task(0)
    with pytest.raises(IndexError, match="row"):
        s.DecodeMask([1]).row_task(5)
    with pytest.raises(ValueError, match="rates"):
        s.DecodeMask([2**31 - 1])
    with pytest.raises(ValueError, match="max_len"):
        _core.SurvivalEstimator(1, 0.5, 2**30)
    v = s.InstanceView(0)
    v.block_size = 0
    with pytest.raises(ValueError, match="block_size"):
        v.blocks_for(1)
    for name in s.batch_scheduler_names():
        with pytest.raises(ValueError, match="block_size"):
            s.make_batch_scheduler(name).schedule(v, 0.0)
    m = s.LatencyModel(s.LatencyCoeffs(t_c=1, a_p=1, c_p=1))
    with pytest.raises(ValueError, match="items.lq"):
        m.batch_time([s.BatchItem(-(2**31), 5, True)])
    with pytest.raises(ValueError, match="sum_len"):
        m.stage_prefill(math.inf, 0.0)
    cfg = s.SimConfig()
    cfg.profile = s.HardwareProfile()
    cfg.profile.name, cfg.profile.kv_blocks = "p", 100
    cfg.global_policy = s.make_global_policy("round_robin")
    cfg.batch_scheduler = lambda: s.make_batch_scheduler("sarathi_fcfs")
    cfg.instances = 2**31 - 1
    with pytest.raises(ValueError, match="instances"):
        _core.simulate([], cfg)
    cfg.instances, cfg.timeline_interval_s = 1, 1e-9
    with pytest.raises(ValueError, match="timeline_interval_s"):
        _core.simulate([], cfg)


def test_scaler_ledger_and_python_scaler_interval():
    sc = s.make_scaler(s.scaler_names()[0])
    r = s.Request(3, 0.0, 10, ttft=1.0, tpot=0.1)
    sc.on_arrival(r, 0.0)
    with pytest.raises(ValueError, match="duplicate id 3"):
        sc.on_arrival(r, 0.0)
    with pytest.raises(KeyError, match="unknown id 4"):
        sc.on_first_token(4, 1.0)
    sc.on_finished(3, 1.0)
    with pytest.raises(KeyError, match="unknown id 3"):
        sc.on_finished(3, 2.0)

    class Hasty(s.Scaler):
        def name(self):
            return "hasty"

        def interval(self):
            return 0.0

        def decide(self, now, views):
            return []

    cfg = s.SimConfig()
    cfg.profile = s.HardwareProfile()
    cfg.profile.name, cfg.profile.kv_blocks = "p", 100
    cfg.global_policy = s.make_global_policy("round_robin")
    cfg.batch_scheduler = lambda: s.make_batch_scheduler("sarathi_fcfs")
    cfg.scaler = Hasty()
    with pytest.raises(ValueError, match="interval"):
        _core.simulate([], cfg)


def test_python_subclass_missing_method_is_a_type_error():
    class Empty(s.GlobalPolicy):
        def name(self):
            return "empty"

        def pending(self):
            return -1  # not a size_t

    p = Empty()
    with pytest.raises(TypeError, match="poll"):
        p.poll(0.0, [])
    with pytest.raises(TypeError, match="pending"):
        _core.GlobalPolicy.pending(p)


def teardown_module():
    print(f"\nfuzz: {CALLS['n']} API calls, {CALLS['errors']} clean errors, 0 crashes")
