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


FIT_ROWS = [
    [1.0, float(l * l), float(l * k), float(l), float(k * 40), 40.0]
    for l, k in zip(np.random.default_rng(4).integers(16, 2048, 512), np.random.default_rng(5).integers(0, 4096, 512))
]
FIT_Y = [0.01 + 1e-8 * r[1] + 1e-4 * r[3] + 1e-6 * r[4] + 1e-4 * r[5] for r in FIT_ROWS]


def _online_fit(fit):
    for x, y in zip(FIT_ROWS, FIT_Y):  # 512 iterations observed, solved every 32 (the engine's window)
        fit.observe(x, y)
    return [fit.solve() for _ in range(len(FIT_ROWS) // 32)]


@pytest.mark.benchmark(group="online fit: 512 iterations, 16 solves")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_online_fit(benchmark, record_ratio, impl):
    from slocore.reference import online_fit as ref_fit

    prior = dict(COEF, a_d=3e-6)  # a wrong shape
    if impl == "cpp":
        out = benchmark(lambda: _online_fit(s.OnlineFit(s.LatencyCoeffs(**prior))))
        assert out[-1].a_d == pytest.approx(1e-6, rel=0.05)
    else:
        out = benchmark.pedantic(
            lambda: _online_fit(ref_fit.OnlineFit(ref_lat.Coeffs(**prior))), rounds=3, iterations=1
        )
        assert out[-1].a_d == pytest.approx(1e-6, rel=0.05)
    record_ratio("online fit: 512 iterations, 16 solves", impl)
