"""The benchmark matrix (`slocore bench matrix`): presets x workloads x loads x seeds x
predictor error, every stack against the strongest baseline of each cell.

Definitions (docs/benchmark.md):
- capacity of a workload on its cluster: the highest offered rate at which `CAPACITY_PRESET`
  (least-outstanding dispatch over vLLM priority engines, the same named baseline for every
  workload) keeps >= 90% SLO attainment over the matrix's own window (`duration_s` of
  arrivals, seed 0): a bracket from the burst rate (the completion rate when `probe_n`
  requests arrive at once, between the 10th and 70th percentile of finish times) doubled
  until attainment drops below 90%, then `CAPACITY_STEPS` geometric bisection steps (about
  4% resolution). So 1.0x is the edge of that stack in the window the cells are measured in,
  and 1.2x is past it. The old definition (the burst rate of least_outstanding+sarathi_fcfs
  alone) was 1.2-24.7x below this on the default workloads (docs/benchmark.md "Capacity"):
  its stack chunked prefills at 512 tokens; in a burst every chat turn and agent call arrives
  at once and finds no predecessor in the prefix cache; a burst measures throughput with an
  unbounded queue, not the rate the SLOs tolerate in the window. Loads
  are fractions of it (arrival rate = load x capacity); a run spans about `duration_s`
  seconds of arrivals.
- predictor error: "exact" (the policies' latency model is the truth), "pm20" (one factor
  per instance, uniform in [0.8, 1.2], sim/belief_noise.h), "shape" (the coefficients of
  another hardware profile: a wrong shape and scale). Online correction stays on (default).
- per cell: attainment mean and 95% CI over seeds (Student t), TTFT/TPOT p99 and cost
  (instance-seconds), means over seeds; per (workload, error, preset): goodput, the highest
  load with mean attainment >= 90%; summary: each preset minus the strongest baseline (the
  baseline preset with the highest mean attainment) of the same cell.
"""

from __future__ import annotations

import json
import math
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from slocore.roles import PD_FIRST_TOKEN
from slocore.sim import stacks, workloads

LOADS = (0.5, 0.8, 1.0, 1.2)
SEEDS = (0, 1, 2)
ERRORS = ("exact", "pm20", "shape")
GOODPUT_ATTAINMENT = 0.9
TTFT_P99_WORSE = 1.1  # a preset's TTFT p99 "worse" than the strongest baseline's beyond this ratio
CAPACITY_WINDOW = (0.1, 0.7)  # share of finished requests between which the burst rate is measured
CAPACITY_PRESET = {"colocated": "least_outstanding+vllm_priority", "pd": "least_outstanding+vllm_priority"}
CAPACITY_ATTAINMENT = 0.9  # the edge: the reference stack's attainment at capacity
CAPACITY_STEPS = 4  # geometric bisection steps after the doubling bracket (2^(1/16): ~4%)
CAPACITY_DOUBLINGS = 8  # at most this many doublings (or halvings) to bracket the edge
# Baselines that use no latency model: their runs are the same under every predictor error, so
# one error's runs stand for the others (tests/test_goodput.py checks it for each on every
# default workload). Not "scorpio" (an SLO-aware router) nor "rr+mlfq" (FastServe's skip-join
# uses predictions).
MODEL_FREE_BASELINES = (
    "rr+sarathi_fcfs",
    "rr+edf",
    "rr+orca",
    "least_outstanding+sarathi_fcfs",
    "least_outstanding+edf",
    "least_outstanding+sarathi_priority",
    "p2c+edf",
    "vllm_priority",
    "least_outstanding+vllm_priority",
    "llmd_scorer+sarathi_fcfs",
    "kv_router+sarathi_fcfs",
)
DEFAULT_PRESETS = (
    "rr+sarathi_fcfs",
    "rr+edf",
    "least_outstanding+edf",
    "least_outstanding+sarathi_priority",
    "p2c+edf",
    "vllm_priority",
    "least_outstanding+vllm_priority",
    "llmd_scorer+sarathi_fcfs",
    "kv_router+sarathi_fcfs",
    "hfx",
    "hfx_pm",
    "goroute+slide_batching",
    "slice",
    "sibyl",
    "slocore",
)
# Student t quantile t_{0.975, df} for df = 1..30 (two-sided 95%); 1.96 beyond.
T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


@dataclass(frozen=True)
class MatrixWorkload:
    name: str
    description: str
    make: Callable  # (rate, seed, n) -> Workload
    probe_n: int  # requests of the capacity probe (all at once)
    cluster: dict  # simulate() kwargs: profile, mode, pool sizes
    wrong_profile: str  # the belief of the "shape" error
    full_only: bool = False

    @property
    def mode(self) -> str:
        return self.cluster.get("mode", "colocated")


def _hfx4(rate, seed, n):
    return workloads.hfx_4task(rate=rate, n_per_task=max(1, n // 4), seed=seed)


def _sharegpt_prio(rate, seed, n):
    return workloads.with_priorities(workloads.sharegpt_like(rate=rate, n=n, seed=seed, ttft=1.5, tpot=0.1), seed=seed)


def _slice_mix(rate, seed, n):
    return workloads.slice_mix(rate=rate, realtime_share=0.7, n=n, seed=seed)


def _sibyl_zeta(rate, seed, n):
    return workloads.sibyl_zeta(rate=rate, n=n, seed=seed, scale=8.0)


# Prefix-sharing workloads (workloads.py): `n` requests -> sessions / tasks by their mean
# requests per session (about 3 chat turns, 4 agent calls).
def _chat(rate, seed, n):
    return workloads.multi_turn_chat(rate=rate, sessions=max(1, n // 3), seed=seed)


def _agentic(rate, seed, n):
    return workloads.agentic(rate=rate, tasks=max(1, n // 4), seed=seed)


def _rag(rate, seed, n):
    return workloads.rag(rate=rate, n=n, seed=seed)


def _bursty(rate, seed, n):
    return workloads.bursty_chat(rate=rate, n=n, seed=seed)


ASCEND, H100, RTX = "ascend910b-qwen7b", "h100-llama2-7b", "rtx4060ti-chatglm2-6b-int4"
WORKLOADS: dict[str, MatrixWorkload] = {}


def register(w: MatrixWorkload) -> MatrixWorkload:
    if w.name in WORKLOADS:
        raise ValueError(f"matrix workload {w.name!r} registered twice")
    WORKLOADS[w.name] = w
    return w


register(
    MatrixWorkload(
        "hfx_4task",
        "HFX Table 1 4-task multi-SLO mix, 2 colocated Ascend 910B Qwen-7B",
        _hfx4,
        2000,
        dict(profile=ASCEND, instances=2),
        H100,
    )
)
register(
    MatrixWorkload(
        "sharegpt_prio",
        "ShareGPT-like, 2 priorities (ProServe 5.1), TTFT 1.5 s TPOT 100 ms, 4 instances",
        _sharegpt_prio,
        2000,
        dict(profile=ASCEND, instances=4),
        H100,
    )
)
register(
    MatrixWorkload(
        "hfx_4task_pd",
        "HFX 4-task mix on 2 prefill + 2 decode instances (P/D)",
        _hfx4,
        2000,
        dict(profile=ASCEND, mode="pd", prefill_instances=2, decode_instances=2),
        H100,
    )
)
register(
    MatrixWorkload(
        "slice_mix",
        "SLICE 7:3 real-time mix on 2 RTX 4060 Ti instances",
        _slice_mix,
        1000,
        dict(profile=RTX, instances=2),
        H100,
        full_only=True,
    )
)
register(
    MatrixWorkload(
        "sibyl_zeta_pd",
        "SIBYL Zeta-like (outputs /8) on 2P4D H100",
        _sibyl_zeta,
        2000,
        dict(profile=H100, mode="pd", prefill_instances=2, decode_instances=4),
        ASCEND,
        full_only=True,
    )
)


for _name, _desc, _make, _n in (
    ("chat", "multi-turn chat sessions, history grows turn by turn (prefix caching on)", _chat, 2000),
    ("agentic", "agentic calls: shared long system prompts, short suffixes, dependent bursts", _agentic, 1000),
    ("rag", "RAG-like 4k-16k-token prompts over a Zipf-popular passage corpus", _rag, 600),
    ("bursty", "ShareGPT-like chat with gamma arrivals, CV 4", _bursty, 2000),
):
    register(MatrixWorkload(_name, f"{_desc}, 4 H100 Llama-2-7B", _make, _n, dict(profile=H100, instances=4), ASCEND))
register(
    MatrixWorkload(
        "sharegpt_mixed",
        "ShareGPT-like, 2 priorities, on a mixed cluster: 2 H100 + 2 Ascend 910B instances",
        _sharegpt_prio,
        2000,
        dict(profile=[H100, H100, ASCEND, ASCEND], instances=4),
        RTX,
        full_only=True,
    )
)


def error_kwargs(error: str, wl: MatrixWorkload) -> dict:
    if error == "exact":
        return {}
    if error == "pm20":
        return {"belief_noise": 0.2}
    if error == "shape":
        return {"belief_profile": wl.wrong_profile}
    raise ValueError(f"error: unknown {error!r} (known: {', '.join(ERRORS)})")


def _instances(wl: MatrixWorkload) -> int:
    c = wl.cluster
    return (
        c.get("instances", 2)
        if wl.mode == "colocated"
        else c.get("prefill_instances", 1) + c.get("decode_instances", 1)
    )


def stack_kwargs(preset: str, wl: MatrixWorkload) -> dict:
    return stacks.scaling_kwargs(stacks.preset(preset, wl.mode), _instances(wl))


def burst_rate(wl_name: str, probe_n: int | None = None) -> dict:
    """Saturated completion rate (req/s) of CAPACITY_PRESET when the whole probe arrives at once."""
    from slocore.sim.runner import simulate

    wl = WORKLOADS[wl_name]
    burst = wl.make(1e6, 0, probe_n or wl.probe_n)
    res = simulate(burst, seed=0, **{**wl.cluster, **stack_kwargs(CAPACITY_PRESET[wl.mode], wl)})
    done = sorted(rec.token_times[-1] for rec in res.recorder.records() if len(rec.token_times))
    lo, hi = int(CAPACITY_WINDOW[0] * len(done)), int(CAPACITY_WINDOW[1] * len(done))
    if hi - lo < 2 or not done[hi - 1] > done[lo]:
        raise RuntimeError(f"capacity probe of {wl_name}: too few requests finished ({len(done)})")
    # Completions per second between the 10th and 70th percentile of finish times: the
    # saturated rate, without the fill at the start or the long-output tail at the end.
    return {"req_s": (hi - 1 - lo) / (done[hi - 1] - done[lo]), "probe_requests": len(burst)}


def rate_arg_per_req_s(wl: MatrixWorkload, n: int) -> float:
    """The generator's `rate` argument per request/s it produces (sessions or tasks per second
    for session workloads): measured on `n` requests at rate 1, seed 0."""
    unit = wl.make(1.0, 0, n)
    span = float(unit.arrival[-1] - unit.arrival[0]) if len(unit) > 1 else 0.0
    return span / (len(unit) - 1) if span > 0 else 1.0


def capacity(
    wl_name: str, probe_n: int | None = None, duration_s: float = 30.0, pd_first_token: str = "prefill"
) -> dict:
    """The highest offered rate (req/s) at which CAPACITY_PRESET keeps >= CAPACITY_ATTAINMENT
    over `duration_s` of arrivals (seed 0): bracketed from the burst rate, then bisected.
    `pd_first_token`: where P/D runs date the first token (simulate's)."""
    from slocore.sim.runner import simulate

    wl = WORKLOADS[wl_name]
    burst = burst_rate(wl_name, probe_n)
    per = rate_arg_per_req_s(wl, probe_n or wl.probe_n)
    kw = {**wl.cluster, **stack_kwargs(CAPACITY_PRESET[wl.mode], wl), "pd_first_token": pd_first_token}
    probes = []

    def ok(rate: float) -> bool:
        att = simulate(wl.make(rate * per, 0, max(10, int(round(rate * duration_s)))), seed=0, **kw).summary[
            "attainment"
        ]
        probes.append((rate, att))
        return att >= CAPACITY_ATTAINMENT

    lo = hi = burst["req_s"]
    if ok(lo):
        for _ in range(CAPACITY_DOUBLINGS):
            hi = 2 * lo
            if not ok(hi):
                break
            lo = hi
    else:
        for _ in range(CAPACITY_DOUBLINGS):
            lo = hi / 2
            if ok(lo):
                break
            hi = lo
    if not any(a >= CAPACITY_ATTAINMENT for _, a in probes) or all(a >= CAPACITY_ATTAINMENT for _, a in probes):
        raise RuntimeError(
            f"capacity of {wl_name}: no edge within {CAPACITY_DOUBLINGS} doublings of the burst rate (probes: {probes})"
        )
    if lo != hi:
        for _ in range(CAPACITY_STEPS):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return {
        "req_s": lo,
        "rate_arg_per_req_s": per,
        "probe_requests": burst["probe_requests"],
        "burst_req_s": burst["req_s"],
        "probes": [{"req_s": r, "attainment": a} for r, a in probes],
        "stack": CAPACITY_PRESET[wl.mode],
    }


@dataclass(frozen=True)
class Job:
    preset: str
    workload: str
    load: float
    seed: int
    error: str
    rate: float  # the workload generator's rate argument
    n: int
    pd_first_token: str = "prefill"  # where P/D runs date the first token (simulate's)


def model_free(preset: str) -> bool:
    """Does the preset use no latency model, so that its runs are the same under every
    predictor error?"""
    return preset in MODEL_FREE_BASELINES


def run_job(job: Job) -> tuple[Job, dict]:
    from slocore.sim.runner import simulate

    wl = WORKLOADS[job.workload]
    t = time.perf_counter()
    kw = {**wl.cluster, **stack_kwargs(job.preset, wl), **error_kwargs(job.error, wl)}
    res = simulate(wl.make(job.rate, job.seed, job.n), seed=job.seed, pd_first_token=job.pd_first_token, **kw)
    s = res.summary
    return job, {
        "attainment": s["attainment"],
        "ttft_p99": s["ttft"]["p99"],
        "tpot_p99": s["tpot"]["p99"],
        "cost": s["instance_seconds"],
        "finished": s["finished"],
        "requests": s["requests"],
        "wall_s": time.perf_counter() - t,
    }


def ci95(xs: list[float]) -> float:
    """Half-width of the 95% confidence interval of the mean (Student t); 0 for one value."""
    if len(xs) < 2:
        return 0.0
    df = len(xs) - 1
    t = T975[df - 1] if df <= len(T975) else 1.96
    return t * statistics.stdev(xs) / math.sqrt(len(xs))


@dataclass
class MatrixConfig:
    presets: tuple = ()
    workloads: tuple = ()
    loads: tuple = LOADS
    seeds: tuple = SEEDS
    errors: tuple = ERRORS
    duration_s: float = 30.0  # arrivals span about this long: requests per run = rate x duration
    probe_n: int | None = None  # capacity probe size (default: each workload's probe_n)
    processes: int = 2
    full: bool = False
    extra: dict = field(default_factory=dict)
    # a model-free baseline runs under the first error only; its runs stand for the others
    reuse_model_free: bool = True
    # where P/D runs date the first token: "prefill" (DistServe's, SIBYL's) or "decode" (where a
    # client behind vLLM's P/D proxy protocol sees it); simulate(pd_first_token=...)
    pd_first_token: str = "prefill"

    def resolve(self) -> MatrixConfig:
        """Defaults filled in and every name checked (KeyError/ValueError naming it)."""
        avail = stacks.presets()
        wls = tuple(self.workloads) or tuple(n for n, w in WORKLOADS.items() if self.full or not w.full_only)
        for w in wls:
            if w not in WORKLOADS:
                raise KeyError(f"workload {w!r} unknown (known: {', '.join(WORKLOADS)})")
        if self.presets:
            for p in self.presets:
                if p not in avail:
                    raise KeyError(f"preset {p!r} unknown or not in this build (known: {', '.join(avail)})")
            ps = tuple(self.presets)
        else:
            ps = tuple(avail) if self.full else tuple(p for p in DEFAULT_PRESETS if p in avail)
        for e in self.errors:
            if e not in ERRORS:
                raise ValueError(f"error {e!r} unknown (known: {', '.join(ERRORS)})")
        if len(self.seeds) < 1 or not self.loads:
            raise ValueError("seeds and loads: need at least one each")
        if any(not (l > 0 and math.isfinite(l)) for l in self.loads):
            raise ValueError(f"loads: must be finite fractions > 0, got {self.loads}")
        if not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise ValueError(f"duration_s: must be finite and > 0, got {self.duration_s}")
        if self.processes < 1:
            raise ValueError(f"processes: must be >= 1, got {self.processes}")
        if self.probe_n is not None and self.probe_n < 1:
            raise ValueError(f"probe_n: must be >= 1 (None: each workload's own), got {self.probe_n}")
        if self.pd_first_token not in PD_FIRST_TOKEN:
            raise ValueError(f"pd_first_token: one of {', '.join(PD_FIRST_TOKEN)}, got {self.pd_first_token!r}")
        return MatrixConfig(
            ps,
            wls,
            tuple(self.loads),
            tuple(self.seeds),
            tuple(self.errors),
            self.duration_s,
            self.probe_n,
            self.processes,
            self.full,
            dict(self.extra),
            self.reuse_model_free,
            self.pd_first_token,
        )


def _worker_init() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _map(fn, items, processes: int, progress: bool, desc: str):
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(items), desc=desc, file=sys.stderr, unit="run")
        except ImportError:
            bar = None
    out = []
    if processes == 1 or len(items) <= 1:
        for x in items:
            out.append(fn(x))
            if bar:
                bar.update()
    else:
        import multiprocessing as mp

        # Workers take SIGTERM's default action: a handler inherited from the parent (a CLI's
        # clean-up) would keep a worker waiting on the task queue's lock alive. The pool is
        # closed and joined when the work is done, not terminated.
        n = min(processes, len(items))  # no idle workers
        pool = mp.get_context("fork" if sys.platform != "win32" else "spawn").Pool(n, _worker_init)
        try:
            for r in pool.imap_unordered(fn, items, chunksize=1):
                out.append(r)
                if bar:
                    bar.update()
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    if bar:
        bar.close()
    return out


def _capacity_job(args):
    return args[0], capacity(*args)


def run_size(cap: dict, load: float, duration_s: float) -> tuple[float, int]:
    """A run at `load` x capacity (`cap` from capacity()): the workload generator's rate
    argument and the number of requests (about `duration_s` of arrivals, at least 10)."""
    return load * cap["req_s"] * cap["rate_arg_per_req_s"], max(10, int(round(load * cap["req_s"] * duration_s)))


def run_matrix(cfg: MatrixConfig, progress: bool = True) -> dict:
    cfg = cfg.resolve()
    t0 = time.perf_counter()
    caps = dict(
        _map(
            _capacity_job,
            [(w, cfg.probe_n, cfg.duration_s, cfg.pd_first_token) for w in cfg.workloads],
            cfg.processes,
            progress,
            "capacity",
        )
    )
    sizes = {(w, l): run_size(caps[w], l, cfg.duration_s)[1] for w in cfg.workloads for l in cfg.loads}
    jobs, reused = [], []
    for w in cfg.workloads:
        wl = WORKLOADS[w]
        for p in cfg.presets:
            if stacks.presets()[p].kwargs_for(wl.mode) is None:
                continue
            for load in cfg.loads:
                for i, e in enumerate(cfg.errors):
                    for s in cfg.seeds:
                        rate_arg = run_size(caps[w], load, cfg.duration_s)[0]
                        job = Job(p, w, load, s, e, rate_arg, sizes[(w, load)], cfg.pd_first_token)
                        (reused if i > 0 and cfg.reuse_model_free and model_free(p) else jobs).append(job)
    results = _map(run_job, jobs, cfg.processes, progress, "matrix")
    ran = {replace(j, error=cfg.errors[0]): r for j, r in results}
    results += [(j, {**ran[replace(j, error=cfg.errors[0])], "ran_with_error": cfg.errors[0]}) for j in reused]
    out = summarize(cfg, caps, sizes, results)
    out["wall_s"] = time.perf_counter() - t0
    out["runs"] = len(jobs)
    out["reused_runs"] = len(reused)
    return out


def ttft_p99_ratio(cell: dict, best: dict | None) -> float | None:
    """The cell's TTFT p99 over the strongest baseline's of the same cell (None without one)."""
    if best is None or not best["ttft_p99"] > 0 or not math.isfinite(cell["ttft_p99"]):
        return None
    return cell["ttft_p99"] / best["ttft_p99"]


def summarize(cfg: MatrixConfig, caps: dict, sizes: dict, results: list) -> dict:
    groups: dict[tuple, list] = {}
    for job, r in results:
        groups.setdefault((job.workload, job.error, job.load, job.preset), []).append((job.seed, r))
    cells = []
    for (w, e, load, p), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        rs.sort()
        att = [r["attainment"] for _, r in rs]
        cells.append(
            {
                "workload": w,
                "error": e,
                "load": load,
                "preset": p,
                "kind": stacks.presets()[p].kind,
                "rate": load * caps[w]["req_s"],
                "seeds": [s for s, _ in rs],
                "attainment": att,
                "attainment_mean": statistics.fmean(att),
                "attainment_ci95": ci95(att),
                "ttft_p99": statistics.fmean(r["ttft_p99"] for _, r in rs),
                "tpot_p99": statistics.fmean(r["tpot_p99"] for _, r in rs),
                "cost": statistics.fmean(r["cost"] for _, r in rs),
                "finished": [r["finished"] for _, r in rs],
                "requests": [r["requests"] for _, r in rs],
                "ran_with_error": rs[0][1].get("ran_with_error", e),
            }
        )
    # Strongest baseline of each (workload, error, load) cell and every preset's difference.
    by_cell: dict[tuple, list] = {}
    for c in cells:
        by_cell.setdefault((c["workload"], c["error"], c["load"]), []).append(c)
    strongest = {}
    for key, cs in by_cell.items():
        base = [c for c in cs if c["kind"] == "baseline"]
        best = max(base, key=lambda c: (c["attainment_mean"], -c["cost"])) if base else None
        strongest[key] = best["preset"] if best else None
        for c in cs:
            c["strongest_baseline"] = strongest[key]
            c["vs_strongest"] = c["attainment_mean"] - best["attainment_mean"] if best else None
            c["ttft_p99_vs_strongest"] = ttft_p99_ratio(c, best)
    goodput = []
    for w in cfg.workloads:
        for e in cfg.errors:
            for p in cfg.presets:
                ok = [
                    c["load"]
                    for c in cells
                    if (c["workload"], c["error"], c["preset"]) == (w, e, p)
                    and c["attainment_mean"] >= GOODPUT_ATTAINMENT
                ]
                ran = any((c["workload"], c["error"], c["preset"]) == (w, e, p) for c in cells)
                if ran:
                    best = max(ok) if ok else None
                    goodput.append(
                        {
                            "workload": w,
                            "error": e,
                            "preset": p,
                            "load": best,
                            "req_s": best * caps[w]["req_s"] if best is not None else 0.0,
                        }
                    )
    summary = []
    for p in cfg.presets:
        mine = [c for c in cells if c["preset"] == p]
        ds = [c["vs_strongest"] for c in mine if c["vs_strongest"] is not None]
        if not ds:
            continue
        ratios = [c["ttft_p99_vs_strongest"] for c in mine if c["ttft_p99_vs_strongest"] is not None]
        summary.append(
            {
                "preset": p,
                "kind": stacks.presets()[p].kind,
                "cells": len(ds),
                "mean_vs_strongest": statistics.fmean(ds),
                "min_vs_strongest": min(ds),
                "max_vs_strongest": max(ds),
                "won": sum(d > 0.01 for d in ds),
                "lost": sum(d < -0.01 for d in ds),
                # The tail the attainment does not show: TTFT p99 over the strongest baseline's.
                "ttft_p99_ratio_median": statistics.median(ratios) if ratios else None,
                "ttft_p99_ratio_max": max(ratios) if ratios else None,
                "ttft_p99_worse": sum(r > TTFT_P99_WORSE for r in ratios),
            }
        )
    requests = {w: {str(l): n for (ww, l), n in sizes.items() if ww == w} for w in cfg.workloads}
    return {
        "config": {**asdict(cfg), "requests": requests, "goodput_attainment": GOODPUT_ATTAINMENT},
        "capacity": caps,
        "cells": cells,
        "goodput": goodput,
        "summary": summary,
        "strongest_baseline": [
            {"workload": k[0], "error": k[1], "load": k[2], "preset": v} for k, v in sorted(strongest.items())
        ],
        "presets": {p: stacks.describe(p) for p in cfg.presets},
    }


def _ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}"


def markdown(m: dict, command: str = "") -> str:
    cfg = m["config"]
    out = ["# Benchmark matrix", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out.append(
        f"Seeds {cfg['seeds']}; loads {cfg['loads']} x capacity, arrivals over ~{cfg['duration_s']:g} s; "
        f"predictor errors {cfg['errors']}; "
        f"{m.get('runs', '?')} runs in {m.get('wall_s', 0):.0f} s on {cfg['processes']} processes."
    )
    if cfg.get("pd_first_token", "prefill") == "decode":
        out[-1] += (
            " P/D first tokens are dated at the decode's first step, where a client behind vLLM's P/D proxy sees them."
        )
    if m.get("reused_runs"):
        out[-1] += (
            f" The model-free baselines ran under the first error only: their {m['reused_runs']} runs under "
            "the other errors are those runs (they use no latency model; `ran_with_error` in matrix.json)."
        )
    if m.get("merged_from"):
        copied = (
            "; model-free baseline cells of the exact predictor stand for every error"
            if m.get("copy_exact_baselines")
            else ""
        )
        out += ["", f"Merged from {len(m['merged_from'])} runs{copied}:", ""]
        out += [f"- `{p['command'] or p['path']}`" for p in m["merged_from"]]
    out += [
        "",
        "## Capacity (highest rate at which the reference stack keeps >= 90% attainment, seed 0)",
        "",
        "| workload | cluster | burst rate req/s | capacity req/s | x burst | requests per run by load | stack |",
        "|---|---|---|---|---|---|---|",
    ]
    for w, c in m["capacity"].items():
        wl = WORKLOADS[w]
        cl = ", ".join(f"{k}={v}" for k, v in wl.cluster.items())
        per = ", ".join(f"{l}x: {n}" for l, n in cfg["requests"][w].items())
        out.append(
            f"| {w} | {cl} | {c['burst_req_s']:.2f} | {c['req_s']:.2f} | {c['req_s'] / c['burst_req_s']:.2f} "
            f"| {per} | {c['stack']} |"
        )
    out += [
        "",
        "## Summary: preset minus the strongest baseline of each cell (attainment, percentage points)",
        "",
        "TTFT p99 columns: the preset's TTFT p99 over the strongest baseline's in the same cell "
        f"(median and largest ratio over the cells; cells where it is more than {TTFT_P99_WORSE:g}x).",
        "",
        "| preset | kind | cells | mean | min | max | won (>+1 pp) | lost (<-1 pp) "
        "| TTFT p99 ratio median | max | cells worse |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sorted(m["summary"], key=lambda s: -s["mean_vs_strongest"]):
        out.append(
            f"| {s['preset']} | {s['kind']} | {s['cells']} | {100 * s['mean_vs_strongest']:+.1f} | "
            f"{100 * s['min_vs_strongest']:+.1f} | {100 * s['max_vs_strongest']:+.1f} | {s['won']} | {s['lost']} "
            f"| {_ratio(s.get('ttft_p99_ratio_median'))} | {_ratio(s.get('ttft_p99_ratio_max'))} "
            f"| {s.get('ttft_p99_worse', '-')} |"
        )
    cells = m["cells"]
    loads = cfg["loads"]
    for w in cfg["workloads"]:
        for e in cfg["errors"]:
            cs = [c for c in cells if c["workload"] == w and c["error"] == e]
            if not cs:
                continue
            out += [
                "",
                f"## {w}, predictor error {e}: attainment % (mean ± 95% CI over seeds)",
                "",
                "| preset | "
                + " | ".join(f"{l:g}x ({l * m['capacity'][w]['req_s']:.1f} req/s)" for l in loads)
                + " | goodput |",
                "|---|" + "---|" * (len(loads) + 1),
            ]
            gp = {g["preset"]: g for g in m["goodput"] if g["workload"] == w and g["error"] == e}
            for p in dict.fromkeys(c["preset"] for c in cs):
                row = []
                for l in loads:
                    c = next((c for c in cs if c["preset"] == p and c["load"] == l), None)
                    row.append(
                        "-" if c is None else f"{100 * c['attainment_mean']:.1f} ± {100 * c['attainment_ci95']:.1f}"
                    )
                g = gp.get(p)
                row.append("none" if g is None or g["load"] is None else f"{g['load']:g}x")
                out.append(f"| {p} | " + " | ".join(row) + " |")
            sb = [next((c["strongest_baseline"] for c in cs if c["load"] == l), "-") for l in loads]
            out.append("| *strongest baseline* | " + " | ".join(str(x) for x in sb) + " | |")
    out += [
        "",
        "## Latency and cost per cell (means over seeds)",
        "",
        "| workload | error | load | preset | TTFT p99 s | x strongest's | TPOT p99 ms | cost inst-s "
        "| vs strongest pp |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        out.append(
            f"| {c['workload']} | {c['error']} | {c['load']:g} | {c['preset']} | {c['ttft_p99']:.3g} | "
            f"{_ratio(c.get('ttft_p99_vs_strongest'))} | {1e3 * c['tpot_p99']:.3g} | {c['cost']:.3g} | "
            f"{'-' if c['vs_strongest'] is None else format(100 * c['vs_strongest'], '+.1f')} |"
        )
    out += ["", "## Presets", ""] + [f"- `{p}`: {d}" for p, d in m["presets"].items()]
    return "\n".join(out) + "\n"


def heatmap(m: dict, path: str) -> None:
    """Preset minus strongest baseline (pp), one panel per predictor error."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit("the heatmap needs matplotlib: pip install 'slocore[plot]'") from e
    cfg, cells = m["config"], m["cells"]
    presets = list(dict.fromkeys(c["preset"] for c in cells))
    cols = [(w, l) for w in cfg["workloads"] for l in cfg["loads"]]
    errors = cfg["errors"]
    fig, axes = plt.subplots(
        len(errors), 1, figsize=(max(6, 0.55 * len(cols) + 3), 0.35 * len(presets) * len(errors) + 1.5), squeeze=False
    )
    for ax, e in zip(axes[:, 0], errors):
        grid = [[math.nan] * len(cols) for _ in presets]
        for c in cells:
            if c["error"] == e and c["vs_strongest"] is not None:
                grid[presets.index(c["preset"])][cols.index((c["workload"], c["load"]))] = 100 * c["vs_strongest"]
        im = ax.imshow(grid, cmap="RdBu", vmin=-50, vmax=50, aspect="auto")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:+.0f}", ha="center", va="center", fontsize=6)
        ax.set_yticks(range(len(presets)), presets, fontsize=7)
        ax.set_xticks(range(len(cols)), [f"{w}\n{l:g}x" for w, l in cols], fontsize=6)
        ax.set_title(f"attainment minus strongest baseline (pp), predictor error: {e}", fontsize=8)
        fig.colorbar(im, ax=ax, fraction=0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write(m: dict, out_dir: str, command: str = "", plot: bool = True) -> dict:
    import os

    os.makedirs(out_dir, exist_ok=True)
    paths = {"json": os.path.join(out_dir, "matrix.json"), "md": os.path.join(out_dir, "matrix.md")}
    with open(paths["json"], "w") as f:
        json.dump({**m, "command": command}, f, indent=1)
    with open(paths["md"], "w") as f:
        f.write(markdown(m, command))
    if plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("matplotlib not installed: no heatmap (pip install 'slocore[plot]')", file=sys.stderr)
        else:
            paths["png"] = os.path.join(out_dir, "matrix.png")
            heatmap(m, paths["png"])
    return paths
