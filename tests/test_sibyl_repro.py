"""SIBYL reproduction at small size: direction and rough size.

Setting: 4P16D, Zeta-like long prompts (outputs /8), processor-sharing H20 decode, prefill
saturated so requests wait seconds between assignment and handoff: the load discrepancy of
Fig. 1. ILS deciding at prefill start herds onto the seemingly idle instance; SIBYL's
shadow terms (Type 2) see the requests still in prefill.
"""

import pytest

from slocore.sim import simulate, workloads
from slocore.sim.scenarios_sibyl import ILS, RR, cluster
from slocore.sim.sibyl_studies import calibration_error, optimal_assignment_ratio

P, D = 4, 16


@pytest.fixture(scope="module")
def runs():
    w = workloads.sibyl_zeta(rate=25.0, n=1500, seed=0, scale=8.0)
    pols = {"rr": RR, "ils": ILS, "sibyl": "sibyl", "no_type2": ("sibyl", {"type2": 0})}
    return {k: simulate(w, decode_policy=p, **cluster(P, D, True)) for k, p in pols.items()}


def p99(res):
    return res.summary["tpot"]["p99"]


def test_sibyl_beats_ils_tail_under_load_discrepancy(runs):
    # Paper Fig. 9 (Zeta, 64 instances): P99 TPOT -78.0% vs ILS. Here: at least -80%.
    assert p99(runs["sibyl"]) < 0.2 * p99(runs["ils"])
    assert runs["sibyl"].summary["throughput_tok_s"] > 1.5 * runs["ils"].summary["throughput_tok_s"]
    # ... and is no worse than RR beyond noise (the paper has it 14.4% better).
    assert p99(runs["sibyl"]) < 1.15 * p99(runs["rr"])


def test_type2_shadow_matters(runs):
    # Fig. 8: dropping a shadow term degrades the tail; Type 2 is what prevents herding.
    assert p99(runs["no_type2"]) > 1.5 * p99(runs["sibyl"])


def test_optimal_assignment_ratio_above_ils(runs):
    # Table 1: SIBYL places more requests on the instance that is least loaded at handoff.
    ids = range(P, P + D)
    assert optimal_assignment_ratio(runs["sibyl"].recorder, ids) > 1.5 * optimal_assignment_ratio(
        runs["ils"].recorder, ids
    )


@pytest.mark.parametrize("name,bound", [("sibyl_sharegpt", 0.14), ("sibyl_zeta", 0.09)])
def test_calibration_error_within_paper_bounds(name, bound):
    # Fig. 7: absolute error below 14% (ShareGPT) and 9% (Zeta); most of the grid below 5%.
    # With the default alpha = 0.99 the EMA remembers ~100 completions: mean error < 5%;
    # the paper's max bounds hold with a longer memory (alpha = 0.999).
    fn = workloads.WORKLOADS[name]
    train, test = fn(n=3000, seed=1).output_len, fn(n=3000, seed=2).output_len
    assert calibration_error(train, test)["mae"] < 0.05
    e = calibration_error(train, test, alpha=0.999)
    assert e["max"] < bound and e["share_below_5pct"] > 0.8
    # An untrained estimator (S = 1) is far off: the check can fail.
    e0 = calibration_error(fn(n=0, seed=1).output_len, fn(n=3000, seed=2).output_len)
    assert e0["max"] > bound
