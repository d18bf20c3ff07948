"""slo_triage (the slocore stack's engine scheduler): one scheduling decision over 256 running
and 1,024 waiting requests at t = 11 s (about half the running ones got their first token in
time; the waiting ones arrived over 10-20 s with a 1 s TTFT, so the queue splits into feasible
and late, and the count-optimal split demotes: 97 feasible waiting requests against the greedy
split's 72), C++ vs the pure-Python reference (python/slocore/reference/slo_triage.py), with
vLLM's priority scheduler on the same view for scale. And a P/D decode instance's queue: 8,192
waiting requests past their first token (a third of them late), in the order their prefills
ended, which the triage splits in one pass and orders only as far as admission takes; and the
same queue as a decode instance's engine presents it call after call (an epoch), which the
C++ triage keeps split and ordered across calls (batch/kept_queue.h)."""

import itertools

import numpy as np
import pytest

import slocore as s
from bench_batch_baselines import make_view
from slocore import _core
from slocore.reference import slo_triage as ref
from slocore.reference import vllm_priority as ref_vp


def triage_view():
    v = make_view()
    rng = np.random.default_rng(1)
    run = list(v.running)
    for x in run:
        x.first_token = x.request.arrival + float(rng.uniform(0.2, 2.0))
    v.running = run
    return v


def decode_view(n_waiting=8192):
    v = triage_view()
    rng = np.random.default_rng(2)
    waiting = []
    for i in rng.permutation(n_waiting):
        r = s.Request(
            1_000_000 + int(i), float(i) * 0.001, int(rng.integers(16, 2048)), output_len=64, ttft=1.0, tpot=0.05
        )
        x = s.RequestState(r, r.prompt_len, 1)  # the KV came over; its first token was made by the prefill
        x.first_token = r.arrival + float(rng.uniform(0.2, 1.5))
        waiting.append(x)
    v.waiting = waiting
    return v


VIEWS = {"triage view": triage_view(), "decode queue of 8k": decode_view()}
IMPLS = {
    "slo_triage": lambda v, now: ref.slo_triage(v, now),
    "vllm_priority": lambda v, now: ref_vp.vllm_priority(v),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", list(IMPLS))
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_schedule(benchmark, record_ratio, view, name, impl):
    benchmark.group = f"{name} 256 running + {len(VIEWS[view].waiting):,} waiting, {view}"
    fn = _core.make_batch_scheduler(name).schedule if impl == "cpp" else IMPLS[name]
    out = benchmark(fn, VIEWS[view], 11.0)
    assert out is not None
    record_ratio(benchmark.group, impl)


@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_decode_queue_followed_across_calls(benchmark, record_ratio, impl):
    """Nothing changes between the calls (the engine's epoch moves on): per call the C++ triage
    reads the running requests and walks its kept order as far as admission takes; the
    reference splits and orders the whole queue. Same plan either way (checked)."""
    v = decode_view()
    v.role = s.Role.DECODE
    benchmark.group = "slo_triage 256 running + 8,192 waiting, decode queue followed across calls"
    want = ref.slo_triage(v, 11.0)
    if impl == "cpp":
        sched, epochs = _core.make_batch_scheduler("slo_triage"), itertools.count(1)

        def fn():
            v.epoch = next(epochs)
            return sched.schedule(v, 11.0)

        plan = fn()
        assert ([(i.request, i.tokens) for i in plan.items], list(plan.preempt)) == want
    else:

        def fn():
            return ref.slo_triage(v, 11.0)

    benchmark(fn)
    record_ratio(benchmark.group, impl)
