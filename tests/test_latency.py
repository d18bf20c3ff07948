"""C++ latency models == the pure-Python reference (hypothesis), plus the HFX mapping."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from slocore.reference import latency as ref

coef = st.floats(0, 1e-2, allow_nan=False)
coeffs = st.builds(ref.Coeffs, coef, st.floats(0, 1e-7), st.floats(0, 1e-7), coef, st.floats(0, 1e-6), coef)
items = st.lists(st.tuples(st.integers(1, 4096), st.integers(0, 32768), st.booleans()), max_size=64)


def cpp(c: ref.Coeffs, theta=0.9):
    return s.LatencyModel(s.LatencyCoeffs(c.t_c, c.a_p, c.b_p, c.c_p, c.a_d, c.b_d), theta)


@given(coeffs, items)
def test_batch_time_matches_reference(c, its):
    m, r = cpp(c), ref.LatencyModel(c)
    got = m.batch_time([s.BatchItem(lq, lkv, p) for lq, lkv, p in its])
    assert got == pytest.approx(r.batch_time(its), rel=1e-12, abs=1e-15)
    for lq, lkv, _ in its[:4]:
        assert m.prefill_cost(lq, lkv) == pytest.approx(r.prefill_cost(lq, lkv), rel=1e-12, abs=1e-15)
        assert m.decode_cost(lkv) == pytest.approx(r.decode_cost(lkv), rel=1e-12, abs=1e-15)


@given(coeffs, st.lists(st.integers(1, 2048), min_size=1, max_size=32))
def test_hfx_stage_model_is_the_same_model(c, lens):
    """HFX Eq. 1 (a + b*sum l + c*sum l^2) == Eq. 7 over fresh prefills; Eq. 2 == decodes."""
    m = cpp(c)
    eq1 = m.stage_prefill(sum(lens), sum(l * l for l in lens))
    assert eq1 == pytest.approx(m.batch_time([s.BatchItem(l, 0, True) for l in lens]), rel=1e-12, abs=1e-15)
    eq2 = m.stage_decode(sum(lens), len(lens))
    assert eq2 == pytest.approx(m.batch_time([s.BatchItem(1, l, False) for l in lens]), rel=1e-12, abs=1e-15)


@given(st.floats(0.0, 1.0), st.lists(st.lists(st.floats(0.2, 5.0), min_size=1, max_size=5), max_size=8))
def test_momentum_correction_matches_reference(theta, windows):
    c = ref.Coeffs(t_c=0.01, c_p=1e-4, a_d=1e-6, b_d=1e-4)
    m, r = cpp(c, theta), ref.LatencyModel(c, theta)
    for w in windows:
        for ratio in w:
            pred = m.batch_time([s.BatchItem(1, 100, False)])
            m.observe(ratio * pred, pred)
            r.observe(ratio * pred, pred)
        m.update()
        r.update()
        assert m.correction == pytest.approx(r.beta, rel=1e-12)


def test_correction_converges_to_the_true_ratio():
    m = cpp(ref.Coeffs(t_c=0.02, b_d=1e-3))
    for _ in range(200):
        pred = m.batch_time([s.BatchItem(1, 10, False)])
        m.observe(1.3 * pred / m.correction, pred)  # truth is 1.3x the uncorrected model
        m.update()
    assert m.correction == pytest.approx(1.3, rel=1e-3)


@given(st.lists(st.floats(1e-3, 1.0), min_size=2, max_size=10), st.floats(0.1, 40))
def test_slice_curve_matches_reference(lat, x):
    b = [float(i + 1) for i in range(len(lat))]
    assert s.BatchLatencyCurve(b, lat)(x) == pytest.approx(ref.BatchLatencyCurve(b, lat)(x), rel=1e-12)


def test_slice_curve_from_model_and_bad_input():
    m = cpp(ref.Coeffs(t_c=0.01, a_d=1e-6, b_d=2e-3))
    curve = s.BatchLatencyCurve.from_model(m, 200, 16)
    assert curve(9) == pytest.approx(0.01 + 9 * (200e-6 + 2e-3))
    with pytest.raises(ValueError, match="increasing"):
        s.BatchLatencyCurve([2.0, 1.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="latencies"):
        s.BatchLatencyCurve([1.0], [0.1, 0.2])


def test_sibyl_throughput_curve():
    # SIBYL appendix I, H20 + Qwen3-32B: TPS(N) = -0.423 N^2 + 44.766 N - 7.753
    tps = s.ThroughputCurve(-0.423, 44.766, -7.753)
    assert tps.total(16) == pytest.approx(ref.tps_total(-0.423, 44.766, -7.753, 16))
    assert tps.per_request(16) == pytest.approx(tps.total(16) / 16)
    peak = ref.tps_total(-0.423, 44.766, -7.753, 44.766 / (2 * 0.423))
    assert tps.total(200) == pytest.approx(peak)  # flat past the vertex (the paper's plateau)
    assert tps.total(200) == pytest.approx(ref.tps_total(-0.423, 44.766, -7.753, 200))
    assert s.ThroughputCurve(0.0, -1.0, 5.0).total(100) == 1.0  # a falling fit is still floored
    assert tps.total(0) == 0.0


def test_bad_coefficients_name_the_field():
    with pytest.raises(ValueError, match="a_d"):
        s.LatencyCoeffs(a_d=-1.0)
    with pytest.raises(ValueError, match="t_c"):
        s.LatencyCoeffs(t_c=math.nan)
    with pytest.raises(ValueError, match="theta"):
        s.LatencyModel(s.LatencyCoeffs(), 1.5)
