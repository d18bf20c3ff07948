"""Core hot paths: metrics summary over a finished run, and batch latency estimation."""

import numpy as np
import pytest

import slocore as s
from slocore.reference import latency as ref_lat
from slocore.reference import metrics as ref_metrics

N_REQ, N_TOK = 5_000, 64


def make_records():
    rng = np.random.default_rng(0)
    recs, rec = [], s.Recorder()
    for i in range(N_REQ):
        arrival = float(i) * 0.01
        t = (arrival + 0.2 + np.cumsum(rng.exponential(0.03, N_TOK))).tolist()
        req = dict(
            arrival=arrival,
            ttft=1.0,
            tpot=0.05,
            deadline=None,
            priority=i % 2,
            priority_weight=1 + i % 2,
            task="ab"[i % 2],
            output_len=N_TOK,
        )
        recs.append((req, t, "finished"))
        rec.add(
            s.Request(
                i,
                arrival,
                100,
                output_len=N_TOK,
                ttft=1.0,
                tpot=0.05,
                priority=i % 2,
                priority_weight=1 + i % 2,
                task="ab"[i % 2],
            )
        )
        for x in t:
            rec.token(i, x)
        rec.finish(i, t[-1])
    return recs, rec


RECS, REC = make_records()


@pytest.mark.benchmark(group="summarize 5k req x 64 tok")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_summarize(benchmark, record_ratio, impl):
    if impl == "cpp":
        out = benchmark(s.summarize, REC)
    else:
        out = benchmark.pedantic(ref_metrics.summarize, args=(RECS,), rounds=3, iterations=1)
    assert out["requests"] == N_REQ
    record_ratio("summarize 5k req x 64 tok", impl)


ITEMS = [
    (int(l), int(k), bool(p))
    for l, k, p in zip(
        np.random.default_rng(1).integers(1, 512, 256),
        np.random.default_rng(2).integers(0, 4096, 256),
        np.random.default_rng(3).random(256) < 0.1,
    )
]
COEF = dict(t_c=0.01, a_p=1e-8, b_p=1e-9, c_p=1e-4, a_d=1e-6, b_d=1e-4)


@pytest.mark.benchmark(group="batch_time 256 items")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_batch_time(benchmark, record_ratio, impl):
    if impl == "cpp":
        m, items = s.LatencyModel(s.LatencyCoeffs(**COEF)), [s.BatchItem(*x) for x in ITEMS]
        benchmark(m.batch_time, items)
    else:
        m = ref_lat.LatencyModel(ref_lat.Coeffs(**COEF))
        benchmark(m.batch_time, ITEMS)
    record_ratio("batch_time 256 items", impl)
