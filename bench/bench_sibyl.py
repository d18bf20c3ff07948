"""SIBYL decision latency (SIBYL Table 5: 5.07 ms per decision in the
paper's Python proxy): one Alg. 1 decision over 256 decode instances and 16,384 tracked
requests (3/4 decoding, 1/4 in prefill), and one as in a P/D burst (8 decode instances,
50,000 tracked requests, 1 in 50 decoding, handoffs spread over 95 s), C++ vs the
pure-Python reference in the same run."""

import numpy as np
import pytest

from slocore import _core
from slocore.reference import sibyl as ref

N_INST, N_REQ = 256, 16_384
GROUP = "sibyl decision 256 inst x 16k req"


def populate(table):
    rng = np.random.default_rng(0)
    for L in rng.integers(1, 8192, 500):  # a trained estimator
        table.est.observe(int(L)) if isinstance(table, ref.ProjectedLoad) else table.estimator.observe(int(L))
    inst = rng.integers(0, N_INST, N_REQ)
    prompt = rng.integers(1, 2048, N_REQ)
    for i in range(N_REQ):
        table.assign(i, int(inst[i]), int(prompt[i]), float(rng.uniform(0, 20)))
        if i % 4:  # active: two decode tokens give it a rate
            g = int(rng.integers(1, 6000))
            table.token(i, 1, 0.0)
            table.token(i, g, g / 25.0)
    return table


TABLES = {}

BURST_INST, BURST_REQ = 8, 50_000
BURST_GROUP = "sibyl decision 8 inst x 50k req (burst)"


def populate_burst(table):
    """What a 100k P/D burst's decisions read halfway: nearly every request still pending."""
    rng = np.random.default_rng(1)
    est = table.est if isinstance(table, ref.ProjectedLoad) else table.estimator
    for L in rng.integers(1, 2000, 200):
        est.observe(int(L))
    inst = rng.integers(0, BURST_INST, BURST_REQ)
    prompt = rng.integers(1, 2048, BURST_REQ)
    tau = np.sort(rng.uniform(0, 95, BURST_REQ))
    for i in range(BURST_REQ):
        table.assign(i, int(inst[i]), int(prompt[i]), float(tau[i]))
        if i % 50 == 0:
            table.token(i, 1, 0.0)
            table.token(i, int(rng.integers(2, 600)), 5.0)
    return table


def _decide(benchmark, record_ratio, group, impl, key, populate_fn, n_inst, args, rounds):
    """One SIBYL decision over `n_inst` instances of the table `key` (built once)."""
    if key not in TABLES:
        TABLES[key] = populate_fn(_core.SibylProjectedLoad() if impl == "cpp" else ref.ProjectedLoad())
    t = TABLES[key]
    insts = list(range(n_inst))
    if impl == "cpp":
        i, loads = benchmark(t.argmin, insts, *args)
    else:
        i, loads = benchmark.pedantic(t.argmin, args=(insts, *args), rounds=rounds, iterations=1)
    assert 0 <= i < n_inst and len(loads) == n_inst
    record_ratio(group, impl)


@pytest.mark.benchmark(group=BURST_GROUP)
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_sibyl_burst_decision(benchmark, record_ratio, impl):
    _decide(benchmark, record_ratio, BURST_GROUP, impl, "burst-" + impl, populate_burst, BURST_INST, (1.0, 50.0), 3)


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_sibyl_decision(benchmark, record_ratio, impl):
    _decide(benchmark, record_ratio, GROUP, impl, impl, populate, N_INST, (10.0, 10.5), 5)


@pytest.mark.parametrize("kind", ["decision", "burst"])
def test_same_decision(kind):
    key, populate_fn, n_inst, args = (
        ("", populate, N_INST, (10.0, 10.5))
        if kind == "decision"
        else ("burst-", populate_burst, BURST_INST, (1.0, 50.0))
    )
    c = TABLES.get(key + "cpp") or populate_fn(_core.SibylProjectedLoad())
    p = TABLES.get(key + "python") or populate_fn(ref.ProjectedLoad())
    ci, cl = c.argmin(list(range(n_inst)), *args)
    pi, pl = p.argmin(list(range(n_inst)), *args)
    assert ci == pi and np.allclose(cl, pl, rtol=1e-9)
