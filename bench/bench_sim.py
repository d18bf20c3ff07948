"""Simulator throughput: simulated requests per wall second for a 100k-request colocated
run and a P/D run with 64 decode instances. Printed at the end of the run."""
import time

import pytest

from slocore.sim import simulate, workloads

RESULTS = {}


def run(kind):
    if kind == "colocated_100k":
        w = workloads.sharegpt_like(rate=100.0, n=100_000, seed=0)
        kw = dict(profile="h100-llama2-7b", instances=16, global_policy="least_outstanding",
                  batch_scheduler="sarathi_fcfs")
    else:
        w = workloads.sharegpt_like(rate=400.0, n=50_000, seed=0)
        kw = dict(profile="h20-qwen3-32b", mode="pd", prefill_instances=16, decode_instances=64,
                  prefill_policy="least_outstanding", decode_policy="least_outstanding",
                  batch_scheduler="sarathi_fcfs", decode_model="processor_sharing")
    t = time.perf_counter()
    res = simulate(w, **kw)
    wall = time.perf_counter() - t
    assert res.summary["finished"] == len(w) and res.stats["plan_violations"] == 0
    return len(w), wall, res.stats


@pytest.mark.benchmark(group="simulator")
@pytest.mark.parametrize("kind", ["colocated_100k", "pd_64_decode"])
def test_simulated_requests_per_second(benchmark, kind):
    n, wall, stats = benchmark.pedantic(run, args=(kind,), rounds=1, iterations=1)
    RESULTS[kind] = (n, wall, stats)


def pytest_sessionfinish():  # pragma: no cover - reporting only
    pass


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    for kind, (n, wall, st) in RESULTS.items():
        print(f"\n{kind}: {n} requests in {wall:.2f} s = {n / wall:,.0f} simulated req/s "
              f"({st['iterations']:,} engine iterations, {st['events']:,} events)")
