"""slo_triage (the slocore stack's engine scheduler): one scheduling decision over 256 running
and 1,024 waiting requests at t = 11 s (about half the running ones got their first token in
time; the waiting ones arrived over 10-20 s with a 1 s TTFT, so the queue splits into feasible
and late, and the count-optimal split demotes: 97 feasible waiting requests against the greedy
split's 72), C++ vs the pure-Python reference (python/slocore/reference/slo_triage.py), with
vLLM's priority scheduler on the same view for scale."""

import numpy as np
import pytest

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


VIEW = triage_view()
IMPLS = {
    "slo_triage": lambda v, now: ref.slo_triage(v, now),
    "vllm_priority": lambda v, now: ref_vp.vllm_priority(v),
}


@pytest.mark.parametrize("name", list(IMPLS))
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_schedule(benchmark, record_ratio, name, impl):
    benchmark.group = f"{name} 256 running + 1k waiting, triage view"
    fn = _core.make_batch_scheduler(name).schedule if impl == "cpp" else IMPLS[name]
    out = benchmark(fn, VIEW, 11.0)
    assert out is not None
    record_ratio(benchmark.group, impl)
