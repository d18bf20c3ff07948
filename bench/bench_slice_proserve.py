"""SLICE and ProServe decision latency, C++ vs the pure-Python reference in the same run:
SlideBatching over a 4,096-request queue, SLICE selection + decode mask over 256 tasks,
GoRouting over 64 instances (with 16 queued requests each)."""

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import latency as ref_lat
from slocore.reference import proserve as ref_ps
from slocore.reference import slice as ref_sl

COEF = dict(t_c=0.023875, a_p=1.6e-9, b_p=3.2e-9, c_p=1.2e-4, a_d=6e-8, b_d=2.4e-5)  # ascend910b-qwen7b


def big_view(n=4096, seed=0):
    rng = np.random.default_rng(seed)
    v = s.InstanceView(0)
    v.max_batch_tokens, v.max_num_seqs = 8192, 512
    v.model = s.LatencyModel(s.LatencyCoeffs(**COEF))
    running, waiting, used = [], [], 0
    for i in range(n):
        prompt = int(rng.integers(16, 2048))
        r = s.Request(
            i,
            float(rng.uniform(0, 10)),
            prompt,
            output_len=512,
            ttft=1.5,
            tpot=0.1,
            priority_weight=float(rng.choice([1.0, 2.0])),
        )
        if i % 2:
            gen = int(rng.integers(1, 200))
            st = s.RequestState(r, prompt + gen - 1, gen)
            running.append(st)
            used += v.blocks_for(st.computed)
        else:
            waiting.append(s.RequestState(r, 0, 0))
    v.running, v.waiting = running, waiting
    v.kv_blocks_total = used + 100_000
    v.kv_blocks_free = 100_000
    return v


VIEW = big_view()


@pytest.mark.benchmark(group="slide_batching 4096-request queue")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_slide_batching(benchmark, record_ratio, impl):
    if impl == "cpp":
        sched = _core.make_batch_scheduler("slide_batching")
        plan = benchmark(sched.schedule, VIEW, 10.0)
        n = len(plan.items)
    else:
        items, _ = benchmark.pedantic(ref_ps.slide_batching, args=(VIEW, 10.0), rounds=3, iterations=1)
        n = len(items)
    assert n > 0
    record_ratio("slide_batching 4096-request queue", impl)


N_TASKS = 256
_rng = np.random.default_rng(1)
TPOTS = [float(x) for x in _rng.choice([0.05, 0.1, 0.12, 0.125, 0.25, 0.5], N_TASKS)]
UTILS = [float(x) for x in _rng.choice([1.0, 2.0, 10.0], N_TASKS)]
B = list(range(1, N_TASKS + 2))
L = [0.002 + 0.00005 * b for b in B]  # a fast engine: the whole set fits in a 10 s cycle
CURVE_CPP, CURVE_PY = _core.BatchLatencyCurve([float(b) for b in B], L), ref_lat.BatchLatencyCurve(B, L)


def slice_cpp():
    sel = _core.select_slice_tasks(TPOTS, UTILS, CURVE_CPP, 10.0)
    return _core.DecodeMask([_core.slice_rate(TPOTS[i]) for i in sel]), sel


def slice_py():
    sel = ref_sl.select_tasks(TPOTS, UTILS, CURVE_PY, 10.0)
    return ref_sl.columns([ref_sl.rate_of(TPOTS[i]) for i in sel]), sel


@pytest.mark.benchmark(group="slice select+mask 256 tasks")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_slice_select_and_mask(benchmark, record_ratio, impl):
    if impl == "cpp":
        _, sel = benchmark(slice_cpp)
    else:
        _, sel = benchmark.pedantic(slice_py, rounds=5, iterations=1)
    assert len(sel) > 100
    record_ratio("slice select+mask 256 tasks", impl)


N_INST, PER = 64, 16


def route_setup(impl):
    views = []
    for i in range(N_INST):
        v = s.InstanceView(i)
        v.kv_blocks_total = v.kv_blocks_free = 10_000
        v.model = s.LatencyModel(s.LatencyCoeffs(**COEF))
        views.append(v)
    pol = (
        _core.make_global_policy("goroute", {"mode": "pd"})
        if impl == "cpp"
        else ref_ps.GoRoute(ref_ps.GoRouteParams(mode="pd"))
    )
    rng = np.random.default_rng(2)
    for k in range(N_INST * PER):  # fill PrefillQueueMap: 16 requests per instance
        r = s.Request(k, 0.0, int(rng.integers(64, 2048)), output_len=8, ttft=30.0, tpot=0.1)
        if impl == "cpp":
            pol.submit(r, 0.0)
            pol.poll(0.0, views)
        else:
            pol.choose(r, 0.0, views)
    return pol, views


ROUTE = {impl: route_setup(impl) for impl in ("cpp", "python")}
NEW = s.Request(10**6, 0.0, 1024, output_len=8, ttft=2.0, tpot=0.1)


@pytest.mark.benchmark(group="goroute 64 instances x 16 queued")
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_goroute(benchmark, record_ratio, impl):
    pol, views = ROUTE[impl]

    # Each round routes one request and retracts it, so every round sees the same queues.
    def cpp():  # the request finishes too: the policy's id ledger takes its id again
        pol.submit(NEW, 0.0)
        a = pol.poll(0.0, views)
        pol.on_prefill_done(NEW.id, a[0].instance, 0.0)
        pol.on_finished(NEW.id, a[0].instance, 0.0)
        return a[0].instance

    def py():
        i = pol.choose(NEW, 0.0, views)
        pol.first_token(NEW.id, views[i].id, 0.0)
        return i

    if impl == "cpp":
        got = benchmark(cpp)
    else:
        got = benchmark.pedantic(py, rounds=20, iterations=1)
    assert 0 <= got < N_INST
    record_ratio("goroute 64 instances x 16 queued", impl)
