"""The slocore dispatch (`slo_predict`) decision latency, C++ vs the pure-Python reference in
the same run: one request routed over 16 instances, each with 8 running decodes, 4 running
prefills and 32 waiting requests (deadline-ordered prediction with and without it)."""

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import slo_predict as ref

COEF = dict(t_c=0.023875, a_p=1.6e-9, b_p=3.2e-9, c_p=1.2e-4, a_d=6e-8, b_d=2.4e-5)  # ascend910b-qwen7b
N_INST = 16


def cluster(seed=0):
    rng = np.random.default_rng(seed)
    views, rid = [], 0
    for i in range(N_INST):
        v = s.InstanceView(i)
        v.kv_blocks_total = v.kv_blocks_free = 100_000
        v.max_batch_tokens = 2048
        v.model = s.LatencyModel(s.LatencyCoeffs(**COEF))
        running, waiting = [], []
        for k in range(44):
            prompt = int(rng.integers(64, 4096))
            ttft = float(rng.choice([0.5, 2.0]))
            r = s.Request(rid, float(rng.uniform(0, 5)), prompt, output_len=256, ttft=ttft, tpot=0.1)
            rid += 1
            if k < 8:
                running.append(s.RequestState(r, prompt + 10, 11))  # decoding
            elif k < 12:
                running.append(s.RequestState(r, prompt // 2, 0))  # prefilling in chunks
            else:
                waiting.append(s.RequestState(r, 0, 0))
        v.running, v.waiting = running, waiting
        views.append(v)
    return views


VIEWS = cluster()
NEW = s.Request(10**6, 5.0, 1024, output_len=8, ttft=1.0, tpot=0.1)


@pytest.mark.benchmark(group="slo_predict 16 instances x 44 requests")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_slo_predict(benchmark, record_ratio, impl):
    if impl == "cpp":
        pol = _core.make_global_policy("slo_predict")

        def run():
            pol.submit(NEW, 5.0)
            a = pol.poll(5.0, VIEWS)
            pol.on_finished(NEW.id, a[0].instance, 5.0)  # it leaves: every round sees the same state
            return a[0].instance

        got = benchmark(run)
    else:
        pol = ref.SloPredict()

        def run():
            pol.new_poll()
            return pol.choose(NEW, 5.0, VIEWS)

        got = benchmark.pedantic(run, rounds=20, iterations=1)
    assert 0 <= got < N_INST
    record_ratio("slo_predict 16 instances x 44 requests", impl)


def held_views():
    """Half the instances busy (44 requests each, as above), half idle: room for a few each."""
    views = cluster(1)
    for v in views[N_INST // 2 :]:
        v.running, v.waiting = [], []
    return views


HELD_VIEWS = held_views()
HELD = [
    s.Request(2 * 10**6 + k, 5.0, 256 + (k * 97) % 2048, output_len=64, ttft=(0.5, 2.0, 8.0)[k % 3], tpot=0.1)
    for k in range(256)
]


@pytest.mark.benchmark(group="slo_predict hold: one poll, 256 held, 16 instances")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_slo_predict_hold_poll(benchmark, record_ratio, impl):
    # One poll of the held queue (the slocore-router preset): by deadline into the idle
    # instances' room, the rest stay held. Each round starts from the same 256 held requests.
    def setup():
        if impl == "cpp":
            pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
            for r in HELD:
                pol.submit(r, 5.0)
            return (pol,), {}
        pol = ref.Held(order="fifo")
        for r in HELD:
            pol.submit(r)
        return (pol,), {}

    def run(pol):
        out = pol.poll(5.0, HELD_VIEWS)
        return len(out)

    got = benchmark.pedantic(run, setup=setup, rounds=30 if impl == "cpp" else 5, iterations=1)
    assert 0 < got < len(HELD)
    record_ratio("slo_predict hold: one poll, 256 held, 16 instances", impl)
