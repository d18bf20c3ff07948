"""Predictor error for the benchmark matrix: belief_noise draws one factor per instance (C++ ==
the pure-Python reference, within +-noise) and belief_profile takes another profile's shape."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import slocore as s
from simkit import PyFcfs, config, profile, requests
from slocore import _core
from slocore.reference.belief_noise import belief_factor
from slocore.sim import simulate, workloads


class FirstBelief(PyFcfs):
    """Records each instance's belief of a 100-token prefill at its first iteration."""

    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def schedule(self, v, now):
        self.seen.setdefault(v.id, v.model.prefill_cost(100, 0))
        return super().schedule(v, now)


@given(noise=st.sampled_from([0.0, 0.05, 0.2, 0.5]), seed=st.integers(0, 2**31))
def test_belief_noise_matches_reference(noise, seed):
    seen = {}
    prof = profile()
    cfg = config(
        prof, instances=4, policy="round_robin", sched=lambda: FirstBelief(seen), belief_noise=noise, seed=seed
    )
    _core.simulate(requests(n=20, rate=100.0), cfg)
    truth = s.LatencyModel(prof.coeffs).prefill_cost(100, 0)
    assert set(seen) == {0, 1, 2, 3}
    for i, b in seen.items():
        f = belief_factor(noise, seed, i)
        assert 1 - noise <= f <= 1 + noise
        assert b == pytest.approx(f * truth, rel=1e-12)
    if noise > 0:  # instances differ
        assert len({round(b, 15) for b in seen.values()}) > 1


def test_belief_noise_and_profile_validated():
    w = workloads.hfx_4task(rate=5, n_per_task=5, seed=0)
    for bad in (-0.1, 1.0, "x"):
        with pytest.raises(ValueError, match="belief_noise"):
            simulate(w, belief_noise=bad)
    with pytest.raises((KeyError, ValueError, FileNotFoundError)):
        simulate(w, belief_profile="no-such-profile")


def test_belief_profile_changes_decisions_not_truth():
    """A wrong-shape belief changes what SLO-aware policies decide, never the engines' truth:
    under round robin + FCFS (belief-free) the run is identical."""
    w = workloads.hfx_4task(rate=40, n_per_task=40, seed=1)
    kw = dict(profile="ascend910b-qwen7b", instances=2)
    base = simulate(w, **kw).summary
    wrong = simulate(w, belief_profile="h100-llama2-7b", **kw).summary
    assert wrong["ttft"]["p99"] == base["ttft"]["p99"] and wrong["attainment"] == base["attainment"]
    hfx = simulate(w, global_policy="hfx", **kw).summary
    hfx_wrong = simulate(w, global_policy="hfx", belief_profile="h100-llama2-7b", **kw)
    assert hfx_wrong.config["belief_profile"] == "h100-llama2-7b"
    assert hfx_wrong.summary["ttft"]["p99"] != hfx["ttft"]["p99"]
