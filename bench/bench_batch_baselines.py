"""Baseline batch schedulers: one scheduling decision over 256 running and 1,024 waiting
requests, C++ vs the pure-Python reference (python/slocore/reference/batch_baselines.py)."""

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import batch_baselines as ref
from slocore.reference import vllm_priority as ref_vp


def make_view(n_running=256, n_waiting=1024, seed=0):
    rng = np.random.default_rng(seed)
    v = s.InstanceView(0)
    v.block_size, v.max_batch_tokens, v.max_num_seqs = 16, 2048, 256
    running, used = [], 0
    for i in range(n_running):
        prompt, gen = int(rng.integers(16, 2048)), int(rng.integers(1, 256))
        r = s.Request(
            i,
            float(rng.uniform(0, 10)),
            prompt,
            output_len=gen + 64,
            ttft=1.0,
            tpot=0.05,
            priority=int(rng.integers(0, 3)),
            priority_weight=float(rng.choice([1.0, 2.0])),
        )
        running.append(s.RequestState(r, prompt + gen - 1, gen))
        used += v.blocks_for(prompt + gen - 1)
    waiting = [
        s.RequestState(
            s.Request(
                n_running + i,
                10 + i * 0.01,
                int(rng.integers(16, 2048)),
                output_len=64,
                ttft=1.0,
                tpot=0.05,
                priority=int(rng.integers(0, 3)),
            ),
            0,
            0,
        )
        for i in range(n_waiting)
    ]
    v.running, v.waiting = running, waiting
    v.kv_blocks_total = used + 4096
    v.kv_blocks_free = 4096
    v.model = s.LatencyModel(s.LatencyCoeffs(t_c=0.01, c_p=1e-4, a_d=1e-6, b_d=1e-3))
    return v


VIEW = make_view()
IMPLS = {
    "sarathi_fcfs": lambda: lambda v, now: ref.sarathi_fcfs(v, 512),
    "edf": lambda: lambda v, now: ref.edf(v, 512),
    "weighted_vtc": lambda: (lambda o: lambda v, now: o.schedule(v))(ref.WeightedVtc(512)),
    "mlfq": lambda: ref.Mlfq().schedule,
    "vllm_priority": lambda: lambda v, now: ref_vp.vllm_priority(v),
}


@pytest.mark.parametrize("name", list(IMPLS))
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_schedule(benchmark, record_ratio, name, impl):
    benchmark.group = f"{name} 256 running + 1k waiting"
    fn = _core.make_batch_scheduler(name).schedule if impl == "cpp" else IMPLS[name]()
    out = benchmark(fn, VIEW, 11.0)
    assert out is not None
    record_ratio(benchmark.group, impl)
