"""HFX Alg. 1: one dispatch decision (the earliest-maturing of 64 instances pulls from a
queue of 10,000 requests ordered by (TPOT, arrival)), C++ vs the pure-Python reference."""

import math

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import hfx as ref

N_INST, N_QUEUE = 64, 10_000
COEF = dict(t_c=0.024, a_p=1.6e-9, b_p=3.2e-9, c_p=1.2e-4, a_d=6e-8, b_d=2.4e-5)
TASKS = [(0.7, 0.5), (1.0, 0.7), (2.0, 0.9), (20.0, 1.0)]


def make_requests(n, first_id, now, rng):
    out = []
    for i in range(n):
        ttft, tpot = TASKS[int(rng.integers(0, 4))]
        out.append(
            s.Request(
                first_id + i,
                now - float(rng.uniform(0, 3)),
                int(rng.integers(16, 2048)),
                output_len=64,
                ttft=ttft,
                tpot=tpot,
            )
        )
    return out


def make_views(rng):
    model = s.LatencyModel(s.LatencyCoeffs(**COEF))
    views = []
    for i in range(N_INST):
        v = s.InstanceView(i)
        v.model, v.kv_blocks_total, v.kv_blocks_free, v.max_batch_tokens = model, 40_000, 30_000, 2048
        run = []
        for k in range(int(rng.integers(4, 32))):
            r = s.Request(
                1_000_000 + i * 100 + k,
                0.0,
                int(rng.integers(16, 1024)),
                output_len=200,
                ttft=2.0,
                tpot=float(rng.choice([0.5, 0.7, 1.0])),
            )
            g = int(rng.integers(1, 100))
            run.append(s.RequestState(r, r.prompt_len + g - 1, g))
        v.running = run
        views.append(v)
    return views


def scenario(impl):
    """A dispatcher holding 10,000 requests whose 64 instances matured at different times;
    returns (poll, now): the next poll releases exactly the earliest instance."""
    rng = np.random.default_rng(0)
    views = make_views(rng)
    now = 10.0
    first = make_requests(N_QUEUE, 0, now, rng)
    if impl == "cpp":
        pol = _core.make_global_policy("hfx")
        for r in first:
            pol.submit(r, now, math.nan)
        pol.poll(now, views)  # every instance takes a batch and gets a maturity in the future
        for r in make_requests(N_QUEUE - pol.pending(), N_QUEUE, now, rng):
            pol.submit(r, now, math.nan)
        t = min(_core.hfx_maturity(pol, v.id) for v in views)
        return (lambda: pol.poll(t, views)), pol.pending
    pol, pviews = ref.Dispatcher("colocated"), [ref.view_of(v) for v in views]
    for r in first:
        pol.submit(ref.req_of(r), now)
    pol.poll(now, pviews)
    for r in make_requests(N_QUEUE - pol.pending(), N_QUEUE, now, rng):
        pol.submit(ref.req_of(r), now)
    t = min(pol.maturity.values())
    return (lambda: pol.poll(t, pviews)), pol.pending


@pytest.mark.benchmark(group="hfx dispatch 64 inst x 10k queue")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_dispatch_decision(benchmark, record_ratio, impl):
    holder = {}

    def setup():
        holder["poll"], holder["pending"] = scenario(impl)
        assert holder["pending"]() == N_QUEUE
        return (), {}

    def run():
        return holder["poll"]()

    out = benchmark.pedantic(run, setup=setup, rounds=15 if impl == "cpp" else 5, iterations=1)
    assert 0 < len(out) and len({a[1] if isinstance(a, tuple) else a.instance for a in out}) == 1  # one instance
    record_ratio("hfx dispatch 64 inst x 10k queue", impl)
