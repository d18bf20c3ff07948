"""Workloads for the simulator: numpy columns, deterministic for a seed.

Each generator cites its source. Lengths: truncated normal from a mean/std (HFX Table 1
reports mean +- std) or log-normal for heavy tails. Arrivals: Poisson, or gamma with a
coefficient of variation (burstiness; cv = 1 is Poisson).
"""

from __future__ import annotations

import functools
import inspect
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

COLUMNS = (
    "arrival",
    "prompt_len",
    "output_len",
    "ttft",
    "tpot",
    "deadline",
    "priority",
    "priority_weight",
    "utility",
    "task",
)


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
    # Prefix identity (prefix caching): per request a tuple of (group, len) segments of shared
    # texts covering its prompt in order (csrc/slocore/core/prefix.h), or None for none at all.
    prefix: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.arrival)
        if self.prefix is not None:
            src = list(self.prefix)
            if len(src) != n:
                raise ValueError(f"prefix: expected {n} rows, got {len(src)}")
            pre = _objects([tuple((int(g), int(ln)) for g, ln in (segs or ())) for segs in src])
            object.__setattr__(self, "prefix", pre)
        casts = dict(
            arrival=float,
            prompt_len=np.int64,
            output_len=np.int64,
            ttft=float,
            tpot=float,
            deadline=float,
            priority=np.int64,
            priority_weight=float,
            utility=float,
            task=np.int64,
        )
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
        if self.prefix is not None:
            for i, segs in enumerate(self.prefix):
                if any(ln < 1 for _, ln in segs) or sum(ln for _, ln in segs) > self.prompt_len[i]:
                    raise ValueError(f"prefix: row {i}: segment lengths must be >= 1 and sum to <= prompt_len")

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def duration(self) -> float:
        return float(self.arrival[-1] - self.arrival[0]) if len(self) else 0.0

    def rate_scaled(self, factor: float) -> Workload:
        """factor 2 doubles the request rate (arrivals compressed 2x)."""
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor: must be finite and > 0, got {factor}")
        return self._with(arrival=self.arrival / factor, params={**self.params, "rate_scale": factor})

    def head(self, n: int) -> Workload:
        pre = None if self.prefix is None else self.prefix[:n]
        return self._with(**{c: getattr(self, c)[:n] for c in COLUMNS}, prefix=pre)

    def prefixes(self) -> np.ndarray:
        """The prefix column, with empty tuples when the workload has none."""
        if self.prefix is not None:
            return self.prefix
        return _objects([()] * len(self))

    def merge(self, other: Workload) -> Workload:
        names = tuple(dict.fromkeys(self.task_names + other.task_names))
        remap = np.array([names.index(t) for t in other.task_names], dtype=np.int64)
        cols = {
            c: np.concatenate([getattr(self, c), getattr(other, c) if c != "task" else remap[other.task]])
            for c in COLUMNS
        }
        order = np.argsort(cols["arrival"], kind="stable")
        pre = None
        if self.prefix is not None or other.prefix is not None:
            pre = np.concatenate([self.prefixes(), other.prefixes()])[order]
        return Workload(
            **{c: v[order] for c, v in cols.items()},
            task_names=names,
            name=f"{self.name}+{other.name}",
            seed=self.seed,
            params={**self.params, **other.params},
            prefix=pre,
        )

    def describe(self) -> dict:
        out = {
            "requests": len(self),
            "duration_s": self.duration,
            "rate": len(self) / self.duration if self.duration > 0 else float("inf"),
            "tasks": {},
        }
        for i, t in enumerate(self.task_names):
            m = self.task == i
            if m.any():
                out["tasks"][t] = dict(
                    n=int(m.sum()),
                    prompt_mean=float(self.prompt_len[m].mean()),
                    prompt_std=float(self.prompt_len[m].std()),
                    output_mean=float(self.output_len[m].mean()),
                    output_std=float(self.output_len[m].std()),
                )
        return out

    def to_csv(self, path) -> None:
        with open(path, "w") as f:
            f.write("arrival,prompt_len,output_len,ttft,tpot,deadline,priority,task\n")
            for i in range(len(self)):
                d = "" if math.isnan(self.deadline[i]) else f"{self.deadline[i]:.6g}"
                f.write(
                    f"{self.arrival[i]:.6f},{self.prompt_len[i]},{self.output_len[i]},{self.ttft[i]:.6g},"
                    f"{self.tpot[i]:.6g},{d},{self.priority[i]},{self.task_names[self.task[i]]}\n"
                )

    def _with(self, **changes) -> Workload:
        kw = {c: getattr(self, c) for c in COLUMNS}
        kw.update(task_names=self.task_names, name=self.name, seed=self.seed, params=self.params, prefix=self.prefix)
        kw.update(changes)
        return Workload(**kw)


def _objects(items) -> np.ndarray:
    """A 1-D object array of `items` (tuples stay elements, never a second axis)."""
    out = np.empty(len(items), dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


# Workloads by name, for scenarios and the CLI; `@workload` adds one.
WORKLOADS: dict[str, Callable[..., Workload]] = {}


# The most requests one workload may hold (a 1M-request run is the simulator's speed target;
# a mistyped rate must fail here, not as an allocation of petabytes).
MAX_REQUESTS = 20_000_000


def workload(fn):
    """Registers `fn` in WORKLOADS, its `seed` and `rate` checked before it runs (numpy's own
    error for a negative seed names no argument)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        bound = sig.bind(*args, **kwargs).arguments
        seed, rate = bound.get("seed", 0), bound.get("rate", 1.0)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be an integer >= 0, got {seed!r}")
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.number)) or not 0 < rate < math.inf:
            raise ValueError(f"rate: must be finite and > 0, got {rate!r}")
        return fn(*args, **kwargs)

    WORKLOADS[fn.__name__] = checked
    return checked


def arrivals(
    n: int, rate: float, rng: np.random.Generator, process: str = "poisson", cv: float = 1.0, start: float = 0.0
) -> np.ndarray:
    """n arrival times at `rate` req/s: Poisson, or gamma inter-arrivals with CV `cv`."""
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"rate: must be finite and > 0, got {rate}")
    if n > MAX_REQUESTS:
        raise ValueError(f"{n:,} requests: more than one workload holds (MAX_REQUESTS = {MAX_REQUESTS:,})")
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


def _part(
    arrival, prompt_len, output_len, ttft, tpot, *, deadline=np.nan, priority=0, utility=1.0, task=0, prefix=None
):
    """One stream of requests for `_build`: per-request arrays, or scalars for every row
    (no deadline, priority 0, weight 1, utility 1, task 0 unless given); `prefix`: the
    rows' shared-text segments, or None for none."""
    arrival = np.asarray(arrival, float)
    n = len(arrival)

    def col(v):
        return np.broadcast_to(np.asarray(v), (n,))

    part = dict(
        arrival=arrival,
        prompt_len=col(prompt_len),
        output_len=col(output_len),
        ttft=col(ttft),
        tpot=col(tpot),
        deadline=col(deadline),
        priority=col(priority),
        priority_weight=np.ones(n),
        utility=col(utility),
        task=col(task),
    )
    if prefix is not None:
        part["prefix"] = list(prefix)
    return part


def _build(parts: list[dict], task_names, name, seed, params) -> Workload:
    cols = {c: np.concatenate([p[c] for p in parts]) for c in COLUMNS}
    order = np.argsort(cols["arrival"], kind="stable")
    pre = None
    if any("prefix" in p for p in parts):
        flat = [segs for p in parts for segs in p.get("prefix", [()] * len(p["arrival"]))]
        pre = _objects(flat)[order]
    return Workload(
        **{c: v[order] for c, v in cols.items()},
        task_names=tuple(task_names),
        name=name,
        seed=seed,
        params=params,
        prefix=pre,
    )


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
        parts.append(
            _part(
                arrivals(n, rate / len(tasks), rng, process, cv),
                lengths(n, im, isd, rng, heavy),
                lengths(n, om, osd, rng, heavy),
                ttft,
                tpot,
                priority=k,
                task=k,
            )
        )
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
def sharegpt_like(
    rate: float = 4.0, n: int = 1000, seed: int = 0, ttft: float = 2.0, tpot: float = 0.1, process="poisson", cv=1.0
) -> Workload:
    """Heavy-tailed chat: log-normal prompt/output with ShareGPT statistics (HFX Table 1
    sharegpt row: input 259 +- 325, output 208 +- 235)."""
    rng = np.random.default_rng(seed)
    _, _, im, isd, om, osd = HFX_TASKS["sharegpt"]
    return _build(
        [
            _part(
                arrivals(n, rate, rng, process, cv),
                lengths(n, im, isd, rng, True, 4096),
                lengths(n, om, osd, rng, True, 2048),
                ttft,
                tpot,
            )
        ],
        ("sharegpt",),
        "sharegpt_like",
        seed,
        dict(rate=rate, n=n, ttft=ttft, tpot=tpot),
    )


@workload
def uniform_random(
    rate: float = 4.0,
    n: int = 1000,
    seed: int = 0,
    prompt_range=(32, 1024),
    output_range=(16, 512),
    ttft: float = 1.0,
    tpot: float = 0.1,
) -> Workload:
    """Uniform prompt/output lengths (inclusive ranges), Poisson arrivals."""
    rng = np.random.default_rng(seed)
    return _build(
        [
            _part(
                arrivals(n, rate, rng),
                rng.integers(prompt_range[0], prompt_range[1] + 1, n),
                rng.integers(output_range[0], output_range[1] + 1, n),
                ttft,
                tpot,
            )
        ],
        ("uniform",),
        "uniform_random",
        seed,
        dict(rate=rate, n=n, prompt_range=prompt_range, output_range=output_range),
    )


def with_priorities(w: Workload, high_share: float = 0.5, weights=(2.0, 1.0), seed: int = 0) -> Workload:
    """ProServe 5.1: each request high or low priority with probability 0.5, weights 2/1."""
    rng = np.random.default_rng(seed)
    high = rng.random(len(w)) < high_share
    return w._with(
        priority=np.where(high, 0, 1),
        priority_weight=np.where(high, weights[0], weights[1]),
        params={**w.params, "high_share": high_share, "weights": weights},
    )


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
def hfx_ramp(rate: float = 15.0, step_s: float = 20.0, end_s: float = 90.0, seed: int = 0, tasks=HFX_4TASK) -> Workload:
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
        parts.append(_part(a, lengths(n, im, isd, rng), lengths(n, om, osd, rng), ttft, tpot, priority=p, task=p))
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
def slice_table2(
    n_a: int = 3,
    n_b: int = 4,
    n_c: int = 2,
    prompt_len: int = 64,
    output_len: int = 200,
    seed: int = 0,
    ttft: float = math.inf,
) -> Workload:
    """SLICE Table II: 3/4/2 tasks of types A/B/C with TPOT 100/120/250 ms, all present at
    t = 0 (1 ms apart). Table II judges TPOT only, so TTFT has no target by default."""
    rng = np.random.default_rng(seed)
    tp = [0.1] * n_a + [0.12] * n_b + [0.25] * n_c
    typ = [0] * n_a + [1] * n_b + [2] * n_c
    n = len(tp)
    order = rng.permutation(n)
    tp, typ = np.array(tp)[order], np.array(typ)[order]
    return _build(
        [_part(np.arange(n) * 1e-3, prompt_len, output_len, ttft, tp, task=typ)],
        ("A", "B", "C"),
        "slice_table2",
        seed,
        dict(n_a=n_a, n_b=n_b, n_c=n_c, prompt_len=prompt_len, output_len=output_len),
    )


@workload
def slice_mix(
    rate: float = 1.0,
    realtime_share: float = 0.7,
    n: int = 200,
    seed: int = 0,
    ttft: float = 3.0,
    rt_utility: float = 10.0,
) -> Workload:
    """SLICE dynamic runs (Sec. VI-C/D/E): Poisson arrivals at `rate` tasks/s, a share of
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
    return _build(
        [
            _part(
                arr,
                cols["prompt_len"],
                cols["output_len"],
                cols["ttft"],
                cols["tpot"],
                deadline=cols["deadline"],
                priority=(kind > 0).astype(np.int64),
                utility=cols["utility"],
                task=kind,
            )
        ],
        names,
        "slice_mix",
        seed,
        dict(rate=rate, realtime_share=realtime_share, n=n, ttft=ttft, rt_utility=rt_utility),
    )


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


def _sibyl_output(n, rng, cap_share, g_mean, g_shape, scale):
    cap = max(1, int(SIBYL_CAP / scale))
    body = rng.gamma(g_shape, g_mean / g_shape, n) / scale
    out = np.where(rng.random(n) < cap_share, cap, np.clip(np.rint(body), 1, cap - 1))
    return out.astype(np.int64)


@workload
def sibyl_random(
    rate: float = 1.0,
    n: int = 1000,
    seed: int = 0,
    scale: float = 1.0,
    ttft: float = 10.0,
    tpot: float = 0.1,
    process="poisson",
    cv=1.0,
) -> Workload:
    """SIBYL "random" (F.2): input U[1, 512], output U[1, 8192/scale], Poisson arrivals."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(1, 513, n)
    output = rng.integers(1, max(2, int(SIBYL_CAP / scale)) + 1, n)
    return _build(
        [_part(arrivals(n, rate, rng, process, cv), prompt, output, ttft, tpot)],
        ("random",),
        "sibyl_random",
        seed,
        dict(rate=rate, n=n, scale=scale),
    )


def _sibyl_set(key, rate, n, seed, scale, ttft, tpot, process, cv):
    pm, psd, pcap, share, gm, gk = SIBYL_SETS[key]
    rng = np.random.default_rng(seed)
    prompt = np.clip(np.rint(rng.lognormal(math.log(pm) - psd * psd / 2, psd, n)), 1, pcap).astype(np.int64)
    output = _sibyl_output(n, rng, share, gm, gk, scale)
    return _build(
        [_part(arrivals(n, rate, rng, process, cv), prompt, output, ttft, tpot)],
        (key,),
        f"sibyl_{key}",
        seed,
        dict(rate=rate, n=n, scale=scale, process=process, cv=cv),
    )


@workload
def sibyl_sharegpt(
    rate: float = 1.0,
    n: int = 1000,
    seed: int = 0,
    scale: float = 1.0,
    ttft: float = 10.0,
    tpot: float = 0.1,
    process="poisson",
    cv=1.0,
) -> Workload:
    """SIBYL heavy-tailed reasoning chat (ShareGPT-like): short prompts, long capped outputs."""
    return _sibyl_set("sharegpt", rate, n, seed, scale, ttft, tpot, process, cv)


@workload
def sibyl_zeta(
    rate: float = 1.0,
    n: int = 1000,
    seed: int = 0,
    scale: float = 1.0,
    ttft: float = 10.0,
    tpot: float = 0.1,
    process="poisson",
    cv=1.0,
) -> Workload:
    """SIBYL long-prompt code editing (Zeta-like): prompts ~345 tokens up to 1.7k, capped outputs."""
    return _sibyl_set("zeta", rate, n, seed, scale, ttft, tpot, process, cv)


# --- Prefix-sharing, bursty and steady-state workloads -------------------------------------

# LMSYS-Chat-1M paper (Zheng et al., ICLR'24), Table 1: turns per conversation, user tokens
# per turn, response tokens per turn. Dispersion (coefficient of variation) of prompt and
# output lengths: HFX Table 1's sharegpt row (259 +- 325 in, 208 +- 235 out).
CHAT_SETS = {"sharegpt": (3.51, 94.46, 348.45), "lmsys": (2.0, 69.5, 214.5)}
CHAT_CV_IN, CHAT_CV_OUT = 324.88 / 259.19, 234.99 / 207.79
# Mooncake (Qin et al., FAST'25) open trace: mean input 7,590 tokens, mean output 182 tokens.
MOONCAKE_IN, MOONCAKE_OUT = 7590.0, 182.0
NOMINAL_TPOT_S = 0.05  # open loop: a reply is assumed to take output_len x 50 ms before the next call

_KIND = {"chat": 1, "agent_system": 2, "agent_task": 3, "rag_doc": 4, "rag_question": 5}


def group_id(kind: str, seed: int, i: int) -> int:
    """A shared text's id: distinct per kind, seed and index (fits in 63 bits)."""
    return (_KIND[kind] << 56) | ((int(seed) & 0xFFFFFF) << 32) | (int(i) & 0xFFFFFFFF)


def _cv_lengths(n, mean, cv, rng, cap=1 << 20):
    return lengths(n, mean, mean * cv, rng, heavy=True, cap=cap)


@workload
def multi_turn_chat(
    rate: float = 0.5,
    sessions: int = 200,
    seed: int = 0,
    dataset: str = "sharegpt",
    think_s: float = 30.0,
    max_context: int = 8192,
    ttft: float = 2.0,
    tpot: float = 0.1,
) -> Workload:
    """Multi-turn chat sessions whose history grows turn by turn. Sessions start as a Poisson
    stream at `rate` sessions/s; a session has a geometric number of turns with the dataset's
    mean (LMSYS-Chat-1M Table 1: sharegpt 3.51, lmsys 2.0) and each turn's user message and
    reply are log-normal with the dataset's means (sharegpt 94.5 / 348.5 tokens, lmsys 69.5 /
    214.5) and HFX Table 1's ShareGPT dispersion. Turn k's prompt is the whole history (all
    earlier messages and replies) plus the new message, so it shares the previous turn's
    prompt and reply as a prefix; a session ends before its context passes `max_context`.
    The next turn arrives after the reply (open loop: output_len x 50 ms) plus a user think
    time, exponential with mean `think_s` (no public trace gives it: our assumption)."""
    if dataset not in CHAT_SETS:
        raise ValueError(f"dataset: unknown {dataset!r} (known: {', '.join(CHAT_SETS)})")
    if not (think_s >= 0 and max_context >= 2):
        raise ValueError(f"think_s, max_context: must be >= 0 and >= 2, got {think_s}, {max_context}")
    turns_mean, user_mean, reply_mean = CHAT_SETS[dataset]
    rng = np.random.default_rng(seed)
    starts = arrivals(sessions, rate, rng)
    turns = rng.geometric(1.0 / turns_mean, sessions)
    arr, prompt, out, pre = [], [], [], []
    for s_i in range(sessions):
        g, history, t = group_id("chat", seed, s_i), 0, float(starts[s_i])
        users = _cv_lengths(int(turns[s_i]), user_mean, CHAT_CV_IN, rng)
        replies = _cv_lengths(int(turns[s_i]), reply_mean, CHAT_CV_OUT, rng)
        thinks = rng.exponential(think_s, int(turns[s_i])) if think_s > 0 else np.zeros(int(turns[s_i]))
        for k in range(int(turns[s_i])):
            p = history + int(users[k])
            if p + int(replies[k]) > max_context:
                break
            arr.append(t), prompt.append(p), out.append(int(replies[k])), pre.append(((g, p),))
            history = p + int(replies[k])
            t += int(replies[k]) * NOMINAL_TPOT_S + float(thinks[k])
    return _build(
        [_part(arr, prompt, out, ttft, tpot, prefix=pre)],
        ("chat",),
        "multi_turn_chat",
        seed,
        dict(rate=rate, sessions=sessions, dataset=dataset, think_s=think_s, max_context=max_context),
    )


@workload
def agentic(
    rate: float = 0.2,
    tasks: int = 100,
    seed: int = 0,
    n_prompts: int = 4,
    steps_mean: float = 4.0,
    query_mean: float = 1500.0,
    tool_mean: float = 600.0,
    tool_gap_s: float = 1.0,
    ttft: float = 5.0,
    tpot: float = 0.1,
    max_context: int = 32768,
) -> Workload:
    """Agentic traffic: a few long shared system prompts with tool definitions, many short
    suffixes, bursts of dependent calls. Tasks arrive as a Poisson stream at `rate` tasks/s;
    each uses one of `n_prompts` system prompts (uniformly) and makes a geometric number of
    calls (mean `steps_mean`). A call's prompt = the system prompt + the task's context (the
    query, then every earlier reply and tool result), so consecutive calls share all but
    their last suffix; replies are short. Calibration: system prompts take half of the mean
    input of Mooncake's open trace (7,590 tokens) and replies its mean output (182 tokens);
    `steps_mean`, `query_mean`, `tool_mean` and the tool latency (exponential, mean
    `tool_gap_s`) are our assumptions. A call follows the previous reply (open loop:
    output_len x 50 ms) plus the tool latency."""
    if n_prompts < 1 or steps_mean < 1:
        raise ValueError(f"n_prompts, steps_mean: must be >= 1, got {n_prompts}, {steps_mean}")
    rng = np.random.default_rng(seed)
    sys_len = _cv_lengths(n_prompts, MOONCAKE_IN / 2, 0.5, rng)
    starts = arrivals(tasks, rate, rng)
    arr, prompt, out, pre = [], [], [], []
    for t_i in range(tasks):
        k = int(rng.integers(0, n_prompts))
        sg, tg = group_id("agent_system", seed, k), group_id("agent_task", seed, t_i)
        steps = int(rng.geometric(1.0 / steps_mean))
        ctx, t = int(_cv_lengths(1, query_mean, 1.0, rng)[0]), float(starts[t_i])
        replies = _cv_lengths(steps, MOONCAKE_OUT, 1.0, rng)
        tools = _cv_lengths(steps, tool_mean, 1.0, rng)
        gaps = rng.exponential(tool_gap_s, steps) if tool_gap_s > 0 else np.zeros(steps)
        for j in range(steps):
            p = int(sys_len[k]) + ctx
            if p + int(replies[j]) > max_context:
                break
            arr.append(t), prompt.append(p), out.append(int(replies[j])), pre.append(((sg, int(sys_len[k])), (tg, ctx)))
            ctx += int(replies[j]) + int(tools[j])
            t += int(replies[j]) * NOMINAL_TPOT_S + float(gaps[j])
    return _build(
        [_part(arr, prompt, out, ttft, tpot, prefix=pre)],
        ("agent",),
        "agentic",
        seed,
        dict(
            rate=rate,
            tasks=tasks,
            n_prompts=n_prompts,
            steps_mean=steps_mean,
            query_mean=query_mean,
            tool_mean=tool_mean,
            tool_gap_s=tool_gap_s,
        ),
    )


@workload
def rag(
    rate: float = 1.0,
    n: int = 500,
    seed: int = 0,
    n_docs: int = 2000,
    chunk: int = 512,
    k_range=(8, 32),
    zipf_a: float = 1.2,
    question_mean: float = 50.0,
    output_mean: float = 200.0,
    ttft: float = 5.0,
    tpot: float = 0.1,
) -> Workload:
    """RAG-like long prompts of 4k-16k tokens: each request retrieves k passages of `chunk`
    tokens (k uniform in `k_range`: 8 x 512 = 4k to 32 x 512 = 16k tokens) from a corpus of
    `n_docs` whose popularity is Zipf(`zipf_a`), most popular first in the prompt, then a
    short unique question. Two requests share a prefix while their leading passages agree.
    Poisson arrivals; output log-normal with mean `output_mean`. The corpus size, Zipf skew,
    question and output means are our assumptions (no public trace gives them)."""
    lo, hi = k_range
    if not (1 <= lo <= hi and chunk >= 1 and n_docs >= hi and zipf_a > 1):
        raise ValueError("k_range, chunk, n_docs, zipf_a: need 1 <= lo <= hi <= n_docs, chunk >= 1, zipf_a > 1")
    rng = np.random.default_rng(seed)
    arr = arrivals(n, rate, rng)
    qs = _cv_lengths(n, question_mean, 0.5, rng)
    outs = _cv_lengths(n, output_mean, 1.0, rng)
    prompt, pre = [], []
    for i in range(n):
        k = int(rng.integers(lo, hi + 1))
        docs: list[int] = []
        while len(docs) < k:  # distinct popularity ranks, most popular first
            d = int(rng.zipf(zipf_a)) - 1
            if d < n_docs and d not in docs:
                docs.append(d)
        docs.sort()
        segs = tuple((group_id("rag_doc", seed, d), chunk) for d in docs) + (
            (group_id("rag_question", seed, i), int(qs[i])),
        )
        pre.append(segs)
        prompt.append(k * chunk + int(qs[i]))
    return _build(
        [_part(arr, prompt, outs, ttft, tpot, prefix=pre)],
        ("rag",),
        "rag",
        seed,
        dict(rate=rate, n=n, n_docs=n_docs, chunk=chunk, k_range=tuple(k_range), zipf_a=zipf_a),
    )


def onoff_arrivals(n: int, rate: float, rng: np.random.Generator, on_s: float, off_s: float) -> np.ndarray:
    """n arrivals at `rate` req/s on average, Poisson at rate*(on+off)/on inside `on_s`-long
    bursts separated by `off_s` of silence."""
    if not (on_s > 0 and off_s >= 0):
        raise ValueError(f"on_s, off_s: must be > 0 and >= 0, got {on_s}, {off_s}")
    busy = np.cumsum(rng.exponential(on_s / (rate * (on_s + off_s)), n))  # time spent in bursts
    return busy + np.floor(busy / on_s) * off_s


@workload
def bursty_chat(
    rate: float = 4.0,
    n: int = 1000,
    seed: int = 0,
    process: str = "gamma",
    cv: float = 4.0,
    on_s: float = 5.0,
    off_s: float = 15.0,
    ttft: float = 2.0,
    tpot: float = 0.1,
) -> Workload:
    """ShareGPT-like chat (lengths of `sharegpt_like`) with bursty arrivals at `rate` req/s on
    average: gamma inter-arrivals with coefficient of variation `cv` (process="gamma"; cv = 1
    is Poisson), or on/off bursts (process="onoff": Poisson within `on_s`-long bursts
    separated by `off_s` idle seconds)."""
    w = sharegpt_like(
        rate=rate,
        n=n,
        seed=seed,
        ttft=ttft,
        tpot=tpot,
        process="gamma" if process == "gamma" else "poisson",
        cv=cv if process == "gamma" else 1.0,
    )
    if process == "onoff":
        w = w._with(arrival=onoff_arrivals(n, rate, np.random.default_rng(seed + 7919), on_s, off_s))
    elif process != "gamma":
        raise ValueError(f"process: must be 'gamma' or 'onoff', got {process!r}")
    return w._with(name="bursty_chat", params=dict(rate=rate, n=n, process=process, cv=cv, on_s=on_s, off_s=off_s))


@workload
def steady(
    name: str = "sharegpt_like",
    rate: float = 4.0,
    duration_s: float = 600.0,
    warmup_s: float = 60.0,
    seed: int = 0,
    **params,
) -> Workload:
    """A steady-state run of workload `name` at `rate`: arrivals over `duration_s` seconds,
    the first `warmup_s` of which `simulate()` leaves out of the summary (params["warmup_s"])."""
    if not (duration_s > warmup_s >= 0):
        raise ValueError(f"duration_s, warmup_s: need duration_s > warmup_s >= 0, got {duration_s}, {warmup_s}")
    if name not in WORKLOADS or name == "steady":
        raise ValueError(f"name: unknown workload {name!r}")
    count = {"multi_turn_chat": "sessions", "agentic": "tasks"}.get(name, "n")
    w = WORKLOADS[name](rate=rate, seed=seed, **{count: int(rate * duration_s * 1.3) + 20}, **params)
    keep = int(np.searchsorted(w.arrival, duration_s))
    w = w.head(keep)
    return w._with(name=f"steady_{name}", params={**w.params, "duration_s": duration_s, "warmup_s": warmup_s})
