"""Least squares on relative error (HFX appendix A): recovers known coefficients, agrees
with the reference, and names the problem on bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from slocore.reference.fit import fit_relative_least_squares as ref_fit


def prefill_design(rng, n=60):
    # HFX appendix A profiling grid: batch sizes x input lengths.
    b = rng.choice([1, 2, 4, 8, 16, 32, 64], n)
    l = rng.choice([4, 16, 64, 128, 256, 512, 1024, 2020], n)
    return np.stack([np.ones(n), b * l, b * l * l], 1).astype(float)


@given(st.integers(0, 10_000))
def test_recovers_exact_coefficients(seed):
    rng = np.random.default_rng(seed)
    X = prefill_design(rng)
    truth = np.array([0.02, 1.5e-4, 2e-8]) * rng.uniform(0.5, 2, 3)
    res = s.fit_relative_least_squares(X.tolist(), (X @ truth).tolist())
    assert np.allclose(res.coeffs, truth, rtol=1e-6)
    assert res.rms_rel_error < 1e-9


@given(st.integers(0, 10_000))
def test_matches_reference_on_noisy_data(seed):
    rng = np.random.default_rng(seed)
    X = prefill_design(rng)
    y = X @ np.array([0.02, 1.5e-4, 2e-8]) * rng.lognormal(0, 0.1, len(X))
    got = s.fit_relative_least_squares(X.tolist(), y.tolist())
    theta, rms, mx = ref_fit(X.tolist(), y.tolist())
    assert np.allclose(got.coeffs, theta, rtol=1e-5, atol=1e-12)
    assert got.rms_rel_error == pytest.approx(rms, rel=1e-6)
    assert got.max_rel_error == pytest.approx(mx, rel=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="y"):
        s.fit_relative_least_squares([[1.0], [2.0]], [1.0, -1.0])
    with pytest.raises(ValueError, match="rows"):
        s.fit_relative_least_squares([[1.0, 2.0]], [1.0])
    with pytest.raises(ValueError, match="dependent"):
        s.fit_relative_least_squares([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="width"):
        s.fit_relative_least_squares([[1.0, 2.0], [2.0]], [1.0, 2.0])
