"""Workloads for the simulator: numpy columns, deterministic for a seed.

Each generator cites its source. Lengths: truncated normal from a mean/std (HFX Table 1
reports mean +- std) or log-normal for heavy tails. Arrivals: Poisson, or gamma with a
coefficient of variation (burstiness; cv = 1 is Poisson).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

# HFX Table 1: task -> (TTFT s, TPOT s, input mean, std, output mean, std).
HFX_TASKS = {
    "medical_qa": (0.7, 0.5, 32.57, 10.32, 38.92, 16.83),
    "tldr_content_gen": (1.0, 0.7, 44.38, 6.58, 96.04, 35.03),
    "tldr_headline_gen": (2.0, 0.9, 121.82, 35.04, 13.59, 6.55),
    "wikisql": (20.0, 1.0, 643.22, 337.01, 27.82, 4.84),
    "gsm8k": (0.7, 0.2, 51.44, 15.78, 90.13, 26.73),
    "sharegpt": (2.0, 0.5, 259.19, 324.88, 207.79, 234.99),
}
HFX_4TASK = ("medical_qa", "tldr_content_gen", "tldr_headline_gen", "wikisql")
HFX_2TASK = ("gsm8k", "sharegpt")
# Tasks whose std exceeds ~half the mean are drawn log-normal (heavy tails), others normal.
HEAVY_TAILED = {"sharegpt"}

COLUMNS = ("arrival", "prompt_len", "output_len", "ttft", "tpot", "deadline", "priority", "priority_weight",
           "utility", "task")


@dataclass(frozen=True)
class Workload:
    arrival: np.ndarray
    prompt_len: np.ndarray
    output_len: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    deadline: np.ndarray
    priority: np.ndarray
    priority_weight: np.ndarray
    utility: np.ndarray
    task: np.ndarray
    task_names: tuple = ("default",)
    name: str = "workload"
    seed: int | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.arrival)
        casts = dict(arrival=float, prompt_len=np.int64, output_len=np.int64, ttft=float, tpot=float, deadline=float,
                     priority=np.int64, priority_weight=float, utility=float, task=np.int64)
        for col, dt in casts.items():
            a = np.ascontiguousarray(getattr(self, col), dtype=dt)
            if a.shape != (n,):
                raise ValueError(f"{col}: expected {n} values, got shape {a.shape}")
            object.__setattr__(self, col, a)

        def first_bad(mask, col, what):
            if mask.any():
                i = int(np.argmax(mask))
                raise ValueError(f"{col}: row {i}: {what} (got {getattr(self, col)[i]})")

        first_bad(~np.isfinite(self.arrival) | (self.arrival < 0), "arrival", "must be finite and >= 0")
        first_bad(np.diff(self.arrival) < 0 if n > 1 else np.zeros(0, bool), "arrival", "must be sorted")
        first_bad(self.prompt_len < 1, "prompt_len", "must be >= 1")
        first_bad(self.output_len < 1, "output_len", "must be >= 1")
        first_bad(~(self.ttft > 0), "ttft", "must be > 0")
        first_bad(~(self.tpot > 0), "tpot", "must be > 0")
        first_bad(~(self.priority_weight > 0), "priority_weight", "must be > 0")
        first_bad((self.task < 0) | (self.task >= len(self.task_names)), "task", "code out of range")

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def duration(self) -> float:
        return float(self.arrival[-1] - self.arrival[0]) if len(self) else 0.0

    def rate_scaled(self, factor: float) -> "Workload":
        """factor 2 doubles the request rate (arrivals compressed 2x)."""
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor: must be finite and > 0, got {factor}")
        return self._with(arrival=self.arrival / factor, params={**self.params, "rate_scale": factor})

    def head(self, n: int) -> "Workload":
        return self._with(**{c: getattr(self, c)[:n] for c in COLUMNS})

    def merge(self, other: "Workload") -> "Workload":
        names = tuple(dict.fromkeys(self.task_names + other.task_names))
        remap = np.array([names.index(t) for t in other.task_names], dtype=np.int64)
        cols = {c: np.concatenate([getattr(self, c), getattr(other, c) if c != "task" else remap[other.task]])
                for c in COLUMNS}
        order = np.argsort(cols["arrival"], kind="stable")
        return Workload(**{c: v[order] for c, v in cols.items()}, task_names=names,
                        name=f"{self.name}+{other.name}", seed=self.seed, params={**self.params, **other.params})

    def describe(self) -> dict:
        out = {"requests": len(self), "duration_s": self.duration,
               "rate": len(self) / self.duration if self.duration > 0 else float("inf"), "tasks": {}}
        for i, t in enumerate(self.task_names):
            m = self.task == i
            if m.any():
                out["tasks"][t] = dict(n=int(m.sum()), prompt_mean=float(self.prompt_len[m].mean()),
                                       prompt_std=float(self.prompt_len[m].std()),
                                       output_mean=float(self.output_len[m].mean()),
                                       output_std=float(self.output_len[m].std()))
        return out

    def to_csv(self, path) -> None:
        with open(path, "w") as f:
            f.write("arrival,prompt_len,output_len,ttft,tpot,deadline,priority,task\n")
            for i in range(len(self)):
                d = "" if math.isnan(self.deadline[i]) else f"{self.deadline[i]:.6g}"
                f.write(f"{self.arrival[i]:.6f},{self.prompt_len[i]},{self.output_len[i]},{self.ttft[i]:.6g},"
                        f"{self.tpot[i]:.6g},{d},{self.priority[i]},{self.task_names[self.task[i]]}\n")

    def _with(self, **changes) -> "Workload":
        kw = {c: getattr(self, c) for c in COLUMNS}
        kw.update(task_names=self.task_names, name=self.name, seed=self.seed, params=self.params)
        kw.update(changes)
        return Workload(**kw)


# Workloads by name, for scenarios and the CLI; `@workload` adds one.
WORKLOADS: dict[str, Callable[..., "Workload"]] = {}


def workload(fn):
    WORKLOADS[fn.__name__] = fn
    return fn


def arrivals(n: int, rate: float, rng: np.random.Generator, process: str = "poisson", cv: float = 1.0,
             start: float = 0.0) -> np.ndarray:
    """n arrival times at `rate` req/s: Poisson, or gamma inter-arrivals with CV `cv`."""
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"rate: must be finite and > 0, got {rate}")
    if process == "poisson":
        gaps = rng.exponential(1.0 / rate, n)
    elif process == "gamma":
        if not cv > 0:
            raise ValueError(f"cv: must be > 0, got {cv}")
        shape = 1.0 / (cv * cv)
        gaps = rng.gamma(shape, 1.0 / (rate * shape), n)
    else:
        raise ValueError(f"process: must be 'poisson' or 'gamma', got {process!r}")
    return start + np.cumsum(gaps)


def lengths(n: int, mean: float, std: float, rng: np.random.Generator, heavy: bool = False, cap: int = 32768):
    """Integer lengths >= 1 with the given mean/std: normal clipped at 1, or log-normal."""
    if heavy:
        sigma2 = math.log(1 + (std / mean) ** 2)
        x = rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    else:
        x = rng.normal(mean, std, n)
    return np.clip(np.rint(x), 1, cap).astype(np.int64)


def _build(parts: list[dict], task_names, name, seed, params) -> Workload:
    cols = {c: np.concatenate([p[c] for p in parts]) for c in COLUMNS}
    order = np.argsort(cols["arrival"], kind="stable")
    return Workload(**{c: v[order] for c, v in cols.items()}, task_names=tuple(task_names), name=name, seed=seed,
                    params=params)


def task_mix(tasks, rate: float, n_per_task: int, seed: int = 0, process="poisson", cv=1.0, name="mix"):
    """Each task of HFX_TASKS contributes n_per_task requests as its own arrival stream at
    rate/len(tasks) (HFX 7.3: Poisson per task, equal samples). Priority = task index."""
    rng = np.random.default_rng(seed)
    parts = []
    for k, t in enumerate(tasks):
        if t not in HFX_TASKS:
            raise ValueError(f"task: unknown {t!r} (known: {', '.join(HFX_TASKS)})")
        ttft, tpot, im, isd, om, osd = HFX_TASKS[t]
        heavy = t in HEAVY_TAILED
        n = n_per_task
        parts.append(dict(
            arrival=arrivals(n, rate / len(tasks), rng, process, cv), prompt_len=lengths(n, im, isd, rng, heavy),
            output_len=lengths(n, om, osd, rng, heavy), ttft=np.full(n, ttft), tpot=np.full(n, tpot),
            deadline=np.full(n, np.nan), priority=np.full(n, k), priority_weight=np.ones(n), utility=np.ones(n),
            task=np.full(n, k)))
    return _build(parts, tasks, name, seed, dict(rate=rate, n_per_task=n_per_task, process=process, cv=cv))


@workload
def hfx_4task(rate: float = 8.0, n_per_task: int = 300, seed: int = 0, **kw) -> Workload:
    """HFX 4-task multi-SLO set (Table 1): medical_qa, tldr_content_gen, tldr_headline_gen, wikisql."""
    return task_mix(HFX_4TASK, rate, n_per_task, seed, name="hfx_4task", **kw)


@workload
def hfx_2task(rate: float = 8.0, n_per_task: int = 300, seed: int = 0, **kw) -> Workload:
    """HFX 2-task set (Table 1): gsm8k and sharegpt (heavy-tailed, log-normal)."""
    return task_mix(HFX_2TASK, rate, n_per_task, seed, name="hfx_2task", **kw)


@workload
def sharegpt_like(rate: float = 4.0, n: int = 1000, seed: int = 0, ttft: float = 2.0, tpot: float = 0.1,
                  process="poisson", cv=1.0) -> Workload:
    """Heavy-tailed chat: log-normal prompt/output with ShareGPT statistics (HFX Table 1
    sharegpt row: input 259 +- 325, output 208 +- 235)."""
    rng = np.random.default_rng(seed)
    _, _, im, isd, om, osd = HFX_TASKS["sharegpt"]
    return _build([dict(arrival=arrivals(n, rate, rng, process, cv), prompt_len=lengths(n, im, isd, rng, True, 4096),
                        output_len=lengths(n, om, osd, rng, True, 2048), ttft=np.full(n, ttft), tpot=np.full(n, tpot),
                        deadline=np.full(n, np.nan), priority=np.zeros(n), priority_weight=np.ones(n),
                        utility=np.ones(n), task=np.zeros(n))], ("sharegpt",), "sharegpt_like", seed,
                  dict(rate=rate, n=n, ttft=ttft, tpot=tpot))


@workload
def uniform_random(rate: float = 4.0, n: int = 1000, seed: int = 0, prompt_range=(32, 1024), output_range=(16, 512),
                   ttft: float = 1.0, tpot: float = 0.1) -> Workload:
    """Uniform prompt/output lengths (inclusive ranges), Poisson arrivals."""
    rng = np.random.default_rng(seed)
    return _build([dict(arrival=arrivals(n, rate, rng), prompt_len=rng.integers(prompt_range[0], prompt_range[1] + 1, n),
                        output_len=rng.integers(output_range[0], output_range[1] + 1, n), ttft=np.full(n, ttft),
                        tpot=np.full(n, tpot), deadline=np.full(n, np.nan), priority=np.zeros(n),
                        priority_weight=np.ones(n), utility=np.ones(n), task=np.zeros(n))], ("uniform",),
                  "uniform_random", seed, dict(rate=rate, n=n, prompt_range=prompt_range, output_range=output_range))


def with_priorities(w: Workload, high_share: float = 0.5, weights=(2.0, 1.0), seed: int = 0) -> Workload:
    """ProServe 5.1: each request high or low priority with probability 0.5, weights 2/1."""
    rng = np.random.default_rng(seed)
    high = rng.random(len(w)) < high_share
    return w._with(priority=np.where(high, 0, 1), priority_weight=np.where(high, weights[0], weights[1]),
                   params={**w.params, "high_share": high_share, "weights": weights})




def make_workload(name: str, **params) -> Workload:
    """A registered workload by name (see ``WORKLOADS``) with keyword parameters."""
    if name not in WORKLOADS:
        raise ValueError(f"workload: unknown {name!r} (known: {', '.join(WORKLOADS)})")
    try:
        return WORKLOADS[name](**params)
    except TypeError as e:
        raise ValueError(f"workload {name}: {e}") from None


# --- HFX ramp (HFX Fig. 6) ---------------------------------------------------------------


@workload
def hfx_ramp(rate: float = 15.0, step_s: float = 20.0, end_s: float = 90.0, seed: int = 0,
             tasks=HFX_4TASK) -> Workload:
    """HFX Sec. 9.1 / Fig. 6 dynamic task rate: one client sends the lowest-priority task (P3)
    at `rate` QPS; every `step_s` seconds a client of the next higher priority joins at the
    same rate (P2, P1, P0), so all four run at 4 x 15 = 60 QPS from 60 s, and every client
    stops at `end_s` (Fig. 6 shows contention in the 60-90 s window). The text's "250
    requests" per client would end each client after ~17 s, before the next joins, which
    contradicts the 60 QPS it describes; we follow the rates. Priority p carries task
    tasks[p]'s Table 1 lengths and SLO targets (P0 = medical_qa, the strictest)."""
    if not (step_s > 0 and end_s > 0 and math.isfinite(end_s)):
        raise ValueError(f"step_s, end_s: must be finite and > 0, got {step_s}, {end_s}")
    rng = np.random.default_rng(seed)
    levels = len(tasks)
    parts = []
    for k, p in enumerate(range(levels - 1, -1, -1)):  # P3 first, then P2 ...
        t = tasks[p]
        if t not in HFX_TASKS:
            raise ValueError(f"task: unknown {t!r} (known: {', '.join(HFX_TASKS)})")
        ttft, tpot, im, isd, om, osd = HFX_TASKS[t]
        a = arrivals(int(rate * (end_s - k * step_s) * 1.5) + 10, rate, rng, start=k * step_s)
        a = a[a < end_s]
        n = len(a)
        parts.append(dict(
            arrival=a, prompt_len=lengths(n, im, isd, rng),
            output_len=lengths(n, om, osd, rng), ttft=np.full(n, ttft), tpot=np.full(n, tpot),
            deadline=np.full(n, np.nan), priority=np.full(n, p), priority_weight=np.ones(n), utility=np.ones(n),
            task=np.full(n, p)))
    return _build(parts, tasks, "hfx_ramp", seed, dict(rate=rate, step_s=step_s, end_s=end_s))



# --- SLICE mixes (SLICE Table II, Sec. V) -------------------------------------------------

# SLICE Sec. VI-A: real-time tasks decode at 20 tokens/s and must end
# within 1.5 s; non-real-time ones are voice chat (8 tokens/s) and text Q&A (10 tokens/s).
# Lengths are not given in the paper: short real-time commands, long non-real-time answers.
SLICE_TASKS = {  # name -> (TPOT s, deadline s or nan, utility, prompt mean, std, output lo, hi)
    "realtime": (0.05, 1.5, 10.0, 64, 16, 8, 24),
    "voice_chat": (0.125, math.nan, 1.0, 128, 32, 60, 200),
    "text_qa": (0.1, math.nan, 1.0, 128, 32, 60, 200),
}


@workload
def slice_table2(n_a: int = 3, n_b: int = 4, n_c: int = 2, prompt_len: int = 64, output_len: int = 200,
                 seed: int = 0, ttft: float = math.inf) -> Workload:
    """SLICE Table II: 3/4/2 tasks of types A/B/C with TPOT 100/120/250 ms, all present at
    t = 0 (1 ms apart). Table II judges TPOT only, so TTFT has no target by default."""
    rng = np.random.default_rng(seed)
    tp = [0.1] * n_a + [0.12] * n_b + [0.25] * n_c
    typ = [0] * n_a + [1] * n_b + [2] * n_c
    n = len(tp)
    order = rng.permutation(n)
    tp, typ = np.array(tp)[order], np.array(typ)[order]
    return _build([dict(arrival=np.arange(n) * 1e-3, prompt_len=np.full(n, prompt_len),
                        output_len=np.full(n, output_len), ttft=np.full(n, ttft), tpot=tp,
                        deadline=np.full(n, np.nan), priority=np.zeros(n), priority_weight=np.ones(n),
                        utility=np.ones(n), task=typ)], ("A", "B", "C"), "slice_table2", seed,
                  dict(n_a=n_a, n_b=n_b, n_c=n_c, prompt_len=prompt_len, output_len=output_len))


@workload
def slice_mix(rate: float = 1.0, realtime_share: float = 0.7, n: int = 200, seed: int = 0, ttft: float = 3.0,
              rt_utility: float = 10.0) -> Workload:
    """SLICE dynamic runs (Sec. V-C/D/E): Poisson arrivals at `rate` tasks/s, a share of
    real-time tasks (TPOT 50 ms, end-to-end deadline 1.5 s, utility `rt_utility`), the rest
    voice chat / text Q&A half and half (TTFT `ttft`, utility 1)."""
    if not 0.0 <= realtime_share <= 1.0:
        raise ValueError(f"realtime_share: must be in [0, 1], got {realtime_share}")
    rng = np.random.default_rng(seed)
    arr = arrivals(n, rate, rng)
    rt = rng.random(n) < realtime_share
    kind = np.where(rt, 0, np.where(rng.random(n) < 0.5, 1, 2))
    names = ("realtime", "voice_chat", "text_qa")
    cols = {c: np.zeros(n) for c in ("prompt_len", "output_len", "ttft", "tpot", "deadline", "utility")}
    for k, t in enumerate(names):
        tpot, dl, util, pm, ps, lo, hi = SLICE_TASKS[t]
        m = kind == k
        c = int(m.sum())
        cols["prompt_len"][m] = lengths(c, pm, ps, rng)
        cols["output_len"][m] = rng.integers(lo, hi + 1, c)
        cols["tpot"][m] = tpot
        cols["deadline"][m] = dl
        cols["ttft"][m] = dl if k == 0 else ttft
        cols["utility"][m] = rt_utility if k == 0 else util
    return _build([dict(arrival=arr, prompt_len=cols["prompt_len"], output_len=cols["output_len"], ttft=cols["ttft"],
                        tpot=cols["tpot"], deadline=cols["deadline"], priority=(kind > 0).astype(np.int64),
                        priority_weight=np.ones(n), utility=cols["utility"], task=kind)], names, "slice_mix", seed,
                  dict(rate=rate, realtime_share=realtime_share, n=n, ttft=ttft, rt_utility=rt_utility))



# --- SIBYL datasets (SIBYL Sec. 5) ---------------------------------------------------------

# SIBYL appendix F.2 / Fig. 2 / Fig. 11: Qwen3-32B with reasoning on, output cap
# 8192. "random": input U[1, 512], output U[1, 8192] (F.2). "ShareGPT": prompt mean 183 (F.2),
# output mean 5657, std ~3317, a large share hitting the 8192 cap (Sec. 2.2, Fig. 11e).
# "Zeta": prompt mean 345, up to ~1.7k (F.2), output std ~3492, dominated by capped requests
# (Sec. 2.2, F.2; the paper gives no mean: we assume ~5000). Outputs are a mixture: with
# probability `cap_share` the cap, otherwise gamma below it; `scale` divides every output
# length (and the cap) to keep 128/256-instance runs small (TPOT in the processor-sharing
# model depends on the batch size N only, not on the length).
SIBYL_CAP = 8192
SIBYL_SETS = {  # name -> (prompt mean, prompt log-sd, prompt cap, cap share, gamma mean, gamma shape)
    "sharegpt": (183.0, 0.9, 4096, 0.50, 3100.0, 1.06),
    "zeta": (345.0, 0.55, 1700, 0.42, 2700.0, 0.9),
}


def _sibyl_columns(n, rate, rng, prompt, output, ttft, tpot, process, cv):
    return dict(arrival=arrivals(n, rate, rng, process, cv), prompt_len=prompt, output_len=output,
                ttft=np.full(n, ttft), tpot=np.full(n, tpot), deadline=np.full(n, np.nan), priority=np.zeros(n),
                priority_weight=np.ones(n), utility=np.ones(n), task=np.zeros(n))


def _sibyl_output(n, rng, cap_share, g_mean, g_shape, scale):
    cap = max(1, int(SIBYL_CAP / scale))
    body = rng.gamma(g_shape, g_mean / g_shape, n) / scale
    out = np.where(rng.random(n) < cap_share, cap, np.clip(np.rint(body), 1, cap - 1))
    return out.astype(np.int64)


@workload
def sibyl_random(rate: float = 1.0, n: int = 1000, seed: int = 0, scale: float = 1.0, ttft: float = 10.0,
                 tpot: float = 0.1, process="poisson", cv=1.0) -> Workload:
    """SIBYL "random" (F.2): input U[1, 512], output U[1, 8192/scale], Poisson arrivals."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(1, 513, n)
    output = rng.integers(1, max(2, int(SIBYL_CAP / scale)) + 1, n)
    return _build([_sibyl_columns(n, rate, rng, prompt, output, ttft, tpot, process, cv)], ("random",), "sibyl_random",
                  seed, dict(rate=rate, n=n, scale=scale))


def _sibyl_set(key, rate, n, seed, scale, ttft, tpot, process, cv):
    pm, psd, pcap, share, gm, gk = SIBYL_SETS[key]
    rng = np.random.default_rng(seed)
    prompt = np.clip(np.rint(rng.lognormal(math.log(pm) - psd * psd / 2, psd, n)), 1, pcap).astype(np.int64)
    output = _sibyl_output(n, rng, share, gm, gk, scale)
    return _build([_sibyl_columns(n, rate, rng, prompt, output, ttft, tpot, process, cv)], (key,), f"sibyl_{key}", seed,
                  dict(rate=rate, n=n, scale=scale, process=process, cv=cv))


@workload
def sibyl_sharegpt(rate: float = 1.0, n: int = 1000, seed: int = 0, scale: float = 1.0, ttft: float = 10.0,
                   tpot: float = 0.1, process="poisson", cv=1.0) -> Workload:
    """SIBYL heavy-tailed reasoning chat (ShareGPT-like): short prompts, long capped outputs."""
    return _sibyl_set("sharegpt", rate, n, seed, scale, ttft, tpot, process, cv)


@workload
def sibyl_zeta(rate: float = 1.0, n: int = 1000, seed: int = 0, scale: float = 1.0, ttft: float = 10.0,
               tpot: float = 0.1, process="poisson", cv=1.0) -> Workload:
    """SIBYL long-prompt code editing (Zeta-like): prompts ~345 tokens up to 1.7k, capped outputs."""
    return _sibyl_set("zeta", rate, n, seed, scale, ttft, tpot, process, cv)

