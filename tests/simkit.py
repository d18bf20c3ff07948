"""Small helpers shared by the simulator tests: a hand-made profile, a Python FCFS batch
scheduler (the research path: a Python policy inside the C++ simulator), request lists."""

import numpy as np

import slocore as s
from slocore import _core


def profile(kv_blocks=100_000, block_size=16, tps=None, kv_fixed_s=0.002, **coeffs):
    p = s.HardwareProfile()
    p.name = "test"
    c = dict(t_c=0.01, c_p=1e-4, a_d=1e-6, b_d=1e-4)
    c.update(coeffs)
    p.coeffs = s.LatencyCoeffs(**c)
    p.kv_blocks = kv_blocks
    p.block_size = block_size
    p.kv_bytes_per_token = 1e5
    p.kv_bandwidth_bytes_per_s = 1e9
    p.kv_fixed_s = kv_fixed_s
    if tps:
        p.tps = s.TpsQuadratic(*tps)
    return p


class PyFcfs(s.BatchScheduler):
    """Decode-first FCFS with chunked prefill; honours budget, seqs and KV (preempts the
    newest running request when a decode does not fit)."""

    def name(self):
        return "py_fcfs"

    def schedule(self, v, now):
        items, budget, blocks, preempt = [], v.max_batch_tokens, v.kv_blocks_free, []
        running = list(v.running)
        while running:
            s_ = running[0]
            k = 1 if not s_.in_prefill else min(s_.to_compute, budget)
            need = v.blocks_needed(s_, k, True)
            if need > blocks and len(running) > 1:  # evict the newest to make room
                victim = running.pop()
                preempt.append(victim.request.id)
                blocks += v.blocks_for(victim.computed) - victim.shared // v.block_size
                continue
            running.pop(0)
            if k <= 0 or need > blocks or len(items) >= v.max_num_seqs:
                continue
            items.append(s.ScheduledItem(s_.request.id, k))
            budget, blocks = budget - k, blocks - need
        for w in v.waiting:
            k = min(w.to_compute, budget)
            need = v.blocks_needed(w, k, False)
            if k <= 0 or need > blocks or len(items) >= v.max_num_seqs:
                break
            items.append(s.ScheduledItem(w.request.id, k))
            budget, blocks = budget - k, blocks - need
        return s.BatchPlan(items, preempt)


def requests(n=100, rate=10.0, seed=0, prompt=(16, 400), output=(1, 60), ttft=1.0, tpot=0.1):
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    return _core.requests_from_columns(
        np.arange(n),
        arrival,
        rng.integers(*prompt, n),
        rng.integers(*output, n),
        np.full(n, ttft),
        np.full(n, tpot),
        np.full(n, np.nan),
        rng.integers(0, 2, n),
        np.ones(n),
        np.ones(n),
        rng.integers(0, 2, n),
        ["a", "b"],
    )


def config(prof=None, instances=2, policy="round_robin", sched=PyFcfs, **kw):
    cfg = s.SimConfig()
    cfg.profile = prof or profile()
    cfg.instances = instances
    cfg.global_policy = _core.make_global_policy(policy) if isinstance(policy, str) else policy
    cfg.batch_scheduler = sched
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg
