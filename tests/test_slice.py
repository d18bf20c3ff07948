"""SLICE: mask, Eq. 7 and Alg. 2 selection C++ == reference; mask properties; the online
scheduler follows the column scan, reschedules on arrival/departure, and plans stay feasible."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from simkit import config, profile, requests
from slocore import _core
from slocore.reference import latency as ref_lat
from slocore.reference import slice as ref
from test_batch_baselines import feasible, views

rates_st = st.lists(st.integers(1, 25), min_size=1, max_size=12)
tpots_st = st.lists(st.sampled_from([0.04, 0.05, 0.1, 0.12, 0.125, 0.25, 0.5, 1.0]), min_size=0, max_size=30)


def curve(t_c=0.0243, per=0.01155, n=40):
    b = list(range(1, n + 1))
    l = [t_c + per * x for x in b]
    return _core.BatchLatencyCurve(b, l), ref_lat.BatchLatencyCurve(b, l)


def test_fig4_example_and_rates():
    d = _core.DecodeMask([2, 6, 1, 4])  # Fig. 4: rates 6/4/2/1 -> a 4 x 6 mask, rows sorted
    assert (d.rows, d.cols) == (4, 6)
    assert [d.row_task(r) for r in range(4)] == [1, 3, 0, 2]
    assert [[int(d.at(r, c)) for c in range(6)] for r in range(4)] == [
        [1] * 6,
        [1, 1, 1, 1, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
    ]
    assert d.column(2) == [1, 3]  # column 2 batches task0 and task1 of the figure
    assert [_core.slice_rate(t) for t in (0.1, 0.12, 0.25, 0.05, 0.125)] == [10, 9, 4, 20, 8]
    with pytest.raises(ValueError, match="tpot"):
        _core.slice_rate(0.0)


@given(rates_st, st.booleans())
def test_mask_matches_reference_and_keeps_each_rate(rates, spread):
    d = _core.DecodeMask(rates, spread)
    order, rows = ref.mask(rates, spread)
    assert [d.row_task(r) for r in range(d.rows)] == order
    for r, row in enumerate(rows):
        got = [int(d.at(r, c)) for c in range(d.cols)]
        assert got == row and sum(got) == rates[order[r]]
        if spread:  # evenly spread: gaps between ones differ by at most one column
            ones = [c for c, x in enumerate(got) if x] + [d.cols + got.index(1)]
            gaps = [b - a for a, b in zip(ones, ones[1:])]
            assert max(gaps) - min(gaps) <= 1
    cc, rc = curve()
    assert d.period(cc) == pytest.approx(ref.period(rates, rc, spread), rel=1e-12)
    if not spread:  # Eq. 7 is the column sum of the front-loaded mask
        desc = sorted(rates, reverse=True)
        assert _core.slice_period_eq7(desc, cc) == pytest.approx(d.period(cc), rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(tpots_st, st.data(), st.floats(0.2, 3.0), st.booleans())
def test_selection_matches_reference(tpots, data, max_cycle, spread):
    utils = data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 10.0]), min_size=len(tpots), max_size=len(tpots)))
    cc, rc = curve()
    got = _core.select_slice_tasks(tpots, utils, cc, max_cycle, spread)
    assert got == ref.select_tasks(tpots, utils, rc, max_cycle, spread)
    # A cap below the task count (the online scheduler's max_num_seqs) orders only the top.
    cap = data.draw(st.integers(0, len(tpots) + 1))
    assert _core.select_slice_tasks(tpots, utils, cc, 9.0, spread, max_tasks=cap) == ref.select_tasks(
        tpots, utils, rc, 9.0, spread, max_tasks=cap
    )
    rates = [_core.slice_rate(tpots[i]) for i in got]
    if got:  # the selected cycle fits; ur order is non-increasing
        assert ref.period(rates, rc, spread) < max_cycle
        ur = [utils[i] * tpots[i] for i in got]
        assert ur == sorted(ur, reverse=True)


def test_selection_max_tasks_must_not_be_negative():
    with pytest.raises(ValueError, match="max_tasks"):
        _core.select_slice_tasks([0.1], [1.0], curve()[0], max_tasks=-1)


def test_table2_selection_defers_one_type_a_task():
    # 9 tasks of Table II on the RTX 4060 Ti profile's l(b): all nine need a 1.10 s cycle.
    cc, _ = curve()
    tp = [0.1] * 3 + [0.12] * 4 + [0.25] * 2
    got = _core.select_slice_tasks(tp, [1.0] * 9, cc)
    assert got == [7, 8, 3, 4, 5, 6, 0, 1]  # C first (highest U*TPOT), then B, then A; the 3rd A waits


def st_(rid, computed, gen, tpot, prompt=10, utility=1.0):
    r = s.Request(rid, 0.0, prompt, output_len=1000, ttft=10.0, tpot=tpot, utility=utility)
    return s.RequestState(r, computed, gen)


def engine(running=(), waiting=()):
    v = s.InstanceView(0)
    v.running, v.waiting = list(running), list(waiting)
    v.kv_blocks_total = v.kv_blocks_free = 10_000
    v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.0243, b_d=0.01155))
    return v


def test_scheduler_scans_columns_and_reschedules_on_arrival():
    sched = _core.make_batch_scheduler("slice")
    run = [st_(1, 10, 1, 0.1), st_(2, 10, 1, 0.25)]  # rates 10 and 4
    counts = {1: 0, 2: 0}
    for _ in range(10):  # one cycle of the 2 x 10 mask
        for it in sched.schedule(engine(run), 0.0).items:
            counts[it.request] += 1
    assert counts == {1: 10, 2: 4}
    # An arrival restarts the selection: the new task is prefilled with column 0's decodes.
    p = sched.schedule(engine(run, [st_(3, 0, 0, 0.12)]), 0.0)
    assert sorted((i.request, i.tokens) for i in p.items) == [(1, 1), (2, 1), (3, 10)]


def test_unselected_task_waits_until_a_departure():
    # Rate 20 tasks: with l(b) = 0.0243 + 0.01155 b only two fit in a 1 s cycle.
    tasks = [st_(i, 10, 1, 0.05) for i in range(3)]
    sched = _core.make_batch_scheduler("slice")
    seen = {it.request for _ in range(20) for it in sched.schedule(engine(tasks), 0.0).items}
    assert len(seen) == 2
    left = [t for t in tasks if t.request.id not in seen]
    kept = [t for t in tasks if t.request.id in seen][:1]
    seen = {it.request for _ in range(20) for it in sched.schedule(engine(kept + left), 0.0).items}
    assert left[0].request.id in seen  # a departure frees its place


@settings(max_examples=100, deadline=None)
@given(views(), st.booleans(), st.sampled_from(["none", "sjf"]))
def test_plans_are_feasible(v, spread, adaptor):
    v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.01, c_p=1e-4, b_d=0.005))
    sched = _core.make_batch_scheduler("slice", {"spread": spread, "adaptor": adaptor})
    for _ in range(3):
        feasible(v, sched.schedule(v, 0.0))


def test_bad_params_are_named():
    for bad, field in (
        ({"max_cycle": 0}, "max_cycle"),
        ({"adaptor": "lifo"}, "adaptor"),
        ({"sjf_tokens": -1}, "sjf_tokens"),
        ({"cycle": 1}, "cycle"),
    ):
        with pytest.raises(ValueError, match=field):
            _core.make_batch_scheduler("slice", bad)


@pytest.mark.parametrize("params", [{}, {"spread": True}, {"adaptor": "sjf"}])
def test_slice_finishes_a_kv_pressured_run(params):
    reqs = requests(120, rate=30, prompt=(32, 300), output=(5, 60))
    res = _core.simulate(
        reqs, config(profile(kv_blocks=60), instances=2, sched=lambda: _core.make_batch_scheduler("slice", params))
    )
    assert res.stats["plan_violations"] == 0 and res.stats["stalled"] == 0
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)
