"""The one definition of each metric: C++ summarize == the pure-Python reference on random
records, and hand-checked cases for SLO attainment, TDG (ProServe Eq. 3) and cost."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from slocore.reference import metrics as ref


@st.composite
def records(draw):
    n = draw(st.integers(1, 12))
    out = []
    for _i in range(n):
        arrival = draw(st.floats(0, 100))
        req = dict(
            arrival=arrival,
            ttft=draw(st.floats(0.05, 5)),
            tpot=draw(st.floats(0.01, 1)),
            deadline=draw(st.none() | st.floats(0.5, 50)),
            priority=draw(st.integers(0, 2)),
            priority_weight=draw(st.sampled_from([1.0, 2.0])),
            task=draw(st.sampled_from(["a", "b"])),
            output_len=draw(st.integers(1, 20)),
        )
        gaps = draw(st.lists(st.floats(0, 2), max_size=req["output_len"]))
        t, cur = [], arrival
        for g in gaps:
            cur += g
            t.append(cur)
        outcome = "finished" if t and len(t) == req["output_len"] else draw(st.sampled_from(["pending", "rejected"]))
        out.append((req, t, outcome))
    return out


def to_recorder(recs):
    rec = s.Recorder()
    for i, (req, t, outcome) in enumerate(recs):
        rec.add(
            s.Request(
                i,
                req["arrival"],
                10,
                output_len=req["output_len"],
                ttft=req["ttft"],
                tpot=req["tpot"],
                deadline=req["deadline"],
                priority=req["priority"],
                priority_weight=req["priority_weight"],
                task=req["task"],
            )
        )
        for x in t:
            rec.token(i, x)
        if outcome == "finished":
            rec.finish(i, t[-1])
        elif outcome == "rejected":
            rec.reject(i, req["arrival"], "test")
    return rec


def assert_close(a, b):
    if isinstance(a, dict):
        assert set(a) == set(b), (a.keys(), b.keys())
        for k in a:
            assert_close(a[k], b[k])
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9)


@given(records(), st.floats(0, 1000), st.floats(0.5, 3), st.floats(0.5, 3))
def test_summary_matches_reference(recs, inst_s, wp, wd):
    rec = to_recorder(recs)
    rec.add_instance_time(inst_s)
    got = s.summarize(rec, s.MetricsOptions(w_prefill=wp, w_decode=wd))
    got.pop("count_by_task"), got.pop("count_by_priority")
    assert_close(got, ref.summarize(recs, inst_s, wp, wd))


def test_hand_checked_attainment_tdg_and_cost():
    rec = s.Recorder()
    # r0: TTFT 0.5 < 1, TPOT 0.1 < 0.2 -> met; 4 tokens all before their deadlines.
    rec.add(s.Request(0, 0.0, 10, output_len=4, ttft=1.0, tpot=0.2))
    for t in (0.5, 0.6, 0.7, 0.8):
        rec.token(0, t)
    rec.finish(0, 0.8)
    # r1: TTFT 1.5 > 1 -> missed; token 1 late, token 2 due 1+1*1.0 = 2.0 at 1.9 -> on time.
    rec.add(s.Request(1, 0.0, 10, output_len=3, ttft=1.0, tpot=1.0, priority=1, priority_weight=2.0))
    rec.token(1, 1.5)
    rec.token(1, 1.9)
    rec.reject(1, 2.0, "engine died")  # third token never came
    # r2: real-time, deadline 1.0, finished at 1.2 -> missed though TTFT/TPOT are fine.
    rec.add(s.Request(2, 0.0, 10, output_len=2, ttft=1.0, tpot=1.0, deadline=1.0, task="rt"))
    rec.token(2, 0.1)
    rec.token(2, 1.2)
    rec.finish(2, 1.2)
    rec.add_instance_time(10.0)
    m = s.summarize(rec)
    assert m["attainment"] == pytest.approx(1 / 3)
    assert m["finished"] == 2 and m["rejected"] == 1
    assert m["attainment_by_priority"] == {0: 0.5, 1: 0.0}
    assert m["attainment_by_task"] == {"": 0.5, "rt": 0.0}
    # TDG: r0 4/4, r1 gets 2 (token 2 only, weight 2) of ideal 2*3=6, r2 2/2.
    assert m["tdg"] == pytest.approx(4 + 2 + 2) and m["tdg_ideal"] == pytest.approx(4 + 6 + 2)
    assert m["cost_units"] == pytest.approx(200.0)  # 10 instance-seconds / 50 ms
    assert m["ttft"]["p50"] == pytest.approx(0.5)
    assert m["output_tokens"] == 8


def test_strict_slo_comparison_and_empty():
    rec = s.Recorder()
    rec.add(s.Request(0, 0.0, 1, output_len=1, ttft=0.5, tpot=1.0))
    rec.token(0, 0.5)  # exactly at the target: not "strictly less" -> missed
    rec.finish(0, 0.5)
    assert s.summarize(rec)["attainment"] == 0.0
    empty = s.summarize(s.Recorder())
    assert empty["requests"] == 0 and math.isnan(empty["ttft"]["p50"])


def test_bad_options():
    with pytest.raises(ValueError, match="quantiles"):
        s.MetricsOptions(quantiles=[1.5])
    with pytest.raises(ValueError, match="cost_unit_s"):
        s.MetricsOptions(cost_unit_s=0)
