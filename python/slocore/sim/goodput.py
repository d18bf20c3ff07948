"""Goodput, searched (`slocore bench goodput`): per (workload, predictor error, stack), the
highest load (a multiple of the workload's capacity) at which the MEAN attainment over the
seeds is >= `matrix.GOODPUT_ATTAINMENT` (90%), found by search instead of read off the
matrix's coarse grid of loads.

Runs are the matrix's own: `matrix.capacity`, `matrix.run_size` (requests = load x capacity x
`duration_s`), `matrix.Job`/`matrix.run_job`, the same seeds, the same cluster and presets.

The search (`search`) assumes attainment falls as load rises (monotone in load); every probed
load is recorded with its attainment, so a curve that is not monotone shows in the report.
- bracket: from `start` (1.0x) double while the mean holds >= 90% (at most up to `GOODPUT_MAX`)
  or halve while it does not (down to `GOODPUT_MIN`);
- geometric bisection of the bracket [lo, hi) until hi/lo <= `GOODPUT_RESOLUTION` (~2%).
Goodput is the bracket's lower end (a probed load that held 90%); `upper` is the lowest
probed load above it that did not. A stack that holds 90% at `GOODPUT_MAX` reports it with
`capped`; one that holds it nowhere down to `GOODPUT_MIN` reports goodput None.

Pruning, each exact under the monotonicity assumption (docs/benchmark.md "Goodput, searched"):
- seeds: a load's seeds run one after another and stop once the mean is decided: it cannot
  reach 90% even if every remaining seed got 100% (attainment <= 1), or it is >= 90% already;
- baselines: only the strongest baseline's goodput (the highest) is needed. Baselines are
  searched one after another; once one holds 90% at load L, the next is first probed at L: if
  it fails there its goodput is below L and it cannot be the strongest (reported as
  "< L", pruned). If it holds, its search continues upward from L, first probing the bracket's
  upper end of the best so far. The order (`BASELINE_ORDER`, likely-strong first) changes the
  cost, not the result.
- `copy_exact_baselines`: a baseline in `matrix.MODEL_FREE_BASELINES` uses no latency model, so its
  runs under the exact predictor stand for every error (as `slocore bench matrix --merge
  --copy-exact-baselines`; tests/test_goodput.py checks the premise for each of them); the
  others (scorpio, rr+mlfq) run under every error.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from slocore.sim import matrix, stacks

GOODPUT_START = 1.0  # the bracket starts at capacity
GOODPUT_MAX = 4.0  # doubling stops here: goodput ">= 4x" is reported as capped
GOODPUT_MIN = 1 / 16  # halving stops here: below it goodput is None
GOODPUT_RESOLUTION = 1.025  # bisection stops when hi/lo <= this (2^(1/32) ~ 2.2% from a doubling)
GOODPUT_ERRORS = ("exact", "pm20")
# Baselines likely strongest first (the strongest baselines of the matrix's cells): it only
# orders the search, so that later baselines are pruned after one probe. Any order gives the
# same goodput under monotonicity.
BASELINE_ORDER = (
    "least_outstanding+vllm_priority",
    "vllm_priority",
    "llmd_scorer+sarathi_fcfs",
    "kv_router+sarathi_fcfs",
    "least_outstanding+sarathi_priority",
    "rr+sarathi_fcfs",
)


@dataclass
class Probe:
    load: float
    seeds: list  # seeds run (a prefix of the configured ones when stopped early)
    attainment: list  # per seed run
    ok: bool  # mean over all seeds >= GOODPUT_ATTAINMENT (decided, possibly early)
    stopped_early: bool


def decide(att: list[float], n_seeds: int, threshold: float = matrix.GOODPUT_ATTAINMENT) -> bool | None:
    """Is the mean over `n_seeds` seeds >= threshold, given the first len(att) of them? None:
    not decided yet. Exact: every attainment is in [0, 1]."""
    need = threshold * n_seeds
    rest = n_seeds - len(att)
    s = math.fsum(att)
    if len(att) == n_seeds:
        return s / n_seeds >= threshold
    if s >= need:
        return True
    if s + rest < need * (1 - 1e-12):
        return False
    return None


def search(
    ok: Callable[[float], bool],
    start: float = GOODPUT_START,
    hi_max: float = GOODPUT_MAX,
    lo_min: float = GOODPUT_MIN,
    resolution: float = GOODPUT_RESOLUTION,
    prune_below_start: bool = False,
    upper_hint: float | None = None,
) -> dict:
    """The highest load with ok(load), assuming ok is True below some threshold and False
    above it. Returns load (None: not even at lo_min), upper (lowest failing load probed
    above it; None when capped), capped, pruned (prune_below_start and ok(start) failed: the
    goodput is below start, not searched further)."""
    if not (0 < lo_min <= start <= hi_max) or resolution <= 1:
        raise ValueError(f"search: need 0 < lo_min <= start <= hi_max and resolution > 1, got {lo_min, start, hi_max}")
    lo = hi = None
    if ok(start):
        lo = start
        nxt = upper_hint if upper_hint is not None and start < upper_hint <= hi_max else None
        while lo < hi_max:
            x = nxt if nxt is not None else min(2 * lo, hi_max)
            nxt = None
            if ok(x):
                lo = x
            else:
                hi = x
                break
        if hi is None:
            return {"load": lo, "upper": None, "capped": True, "pruned": False}
    else:
        hi = start
        if prune_below_start:
            return {"load": None, "upper": start, "capped": False, "pruned": True}
        while hi > lo_min:
            x = max(hi / 2, lo_min)
            if ok(x):
                lo = x
                break
            hi = x
        if lo is None:
            return {"load": None, "upper": hi, "capped": False, "pruned": False}
    while hi / lo > resolution:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return {"load": lo, "upper": hi, "capped": False, "pruned": False}


@dataclass
class GoodputConfig:
    stacks: tuple = ()  # default: "slocore" + every baseline of the workload's mode
    workloads: tuple = ()  # default: the matrix's default workloads
    errors: tuple = GOODPUT_ERRORS
    seeds: tuple = matrix.SEEDS
    duration_s: float = 30.0
    probe_n: int | None = None
    processes: int = 1
    prune: bool = True
    copy_exact_baselines: bool = True
    pd_first_token: str = "prefill"  # where P/D runs date the first token (simulate's; the matrix's)
    capacities: dict = field(default_factory=dict)  # workload -> matrix.capacity() output (a cache)
    # (workload, error) -> (load, upper) of the best baseline a previous part found: the
    # baseline chain starts from it (a part searching more baselines, see `floors_from`).
    floors: dict = field(default_factory=dict)

    def resolve(self) -> GoodputConfig:
        mc = matrix.MatrixConfig(
            presets=tuple(self.stacks),
            workloads=tuple(self.workloads),
            loads=(1.0,),
            seeds=tuple(self.seeds),
            errors=tuple(self.errors),
            duration_s=self.duration_s,
            probe_n=self.probe_n,
            processes=self.processes,
            pd_first_token=self.pd_first_token,
        ).resolve()  # the matrix's own checks, each naming the field
        if not self.errors:
            raise ValueError("errors: need at least one")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: repeated seed in {tuple(self.seeds)}")
        if self.stacks:
            ps = mc.presets
        else:
            avail = stacks.presets()
            ps = tuple(p for p in ("slocore",) if p in avail) + tuple(stacks.presets(kind="baseline"))
        for w, c in self.capacities.items():
            if not isinstance(c, dict) or not all(k in c for k in ("req_s", "rate_arg_per_req_s")):
                raise ValueError(f"capacities[{w!r}]: needs req_s and rate_arg_per_req_s (a matrix.json capacity)")
        return GoodputConfig(
            ps,
            mc.workloads,
            mc.errors,
            mc.seeds,
            mc.duration_s,
            mc.probe_n,
            mc.processes,
            self.prune,
            self.copy_exact_baselines,
            mc.pd_first_token,
            dict(self.capacities),
            dict(self.floors),
        )


def _stacks_for(cfg: GoodputConfig, wl: str) -> tuple[list[str], list[str]]:
    """(baselines in search order, other stacks) of `cfg.stacks` defined for the workload's mode."""
    mode = matrix.WORKLOADS[wl].mode
    known = stacks.presets()
    here = [p for p in cfg.stacks if known[p].kwargs_for(mode) is not None]
    base = [p for p in here if known[p].kind == "baseline"]
    base.sort(key=lambda p: BASELINE_ORDER.index(p) if p in BASELINE_ORDER else len(BASELINE_ORDER))
    return base, [p for p in here if known[p].kind != "baseline"]


@dataclass(frozen=True)
class Task:
    """One unit of work for a worker: a workload, its predictor errors and its stacks, searched
    in order (the baselines as one pruned chain per error, sharing the runs of model-free
    baselines across errors when `copy_exact_baselines`)."""

    workload: str
    errors: tuple
    stacks: tuple
    chain: bool  # the stacks are baselines: prune against the best so far


def _run_task(args) -> tuple[Task, list, list]:
    task, cap, cfg, progress = args
    rows, runs = [], []
    cache: dict[tuple, dict] = {}  # (preset, load, seed, error run with) -> run_job result

    def run(preset: str, load: float, seed: int, error: str) -> dict:
        key = (preset, load, seed, error)
        if key not in cache:
            rate, n = matrix.run_size(cap, load, cfg.duration_s)
            job = matrix.Job(preset, task.workload, load, seed, error, rate, n, cfg.pd_first_token)
            _, r = matrix.run_job(job)
            runs.append({"error": error, "preset": preset, "load": load, "seed": seed, **r})
            cache[key] = r
        return cache[key]

    def searcher(preset: str, error: str, start: float, prune: bool, hint: float | None):
        probes: list[Probe] = []
        ran = "exact" if cfg.copy_exact_baselines and matrix.model_free(preset) else error

        def ok(load: float) -> bool:
            att, seeds = [], []
            verdict = None
            for s in cfg.seeds:
                att.append(run(preset, load, s, ran)["attainment"])
                seeds.append(s)
                verdict = decide(att, len(cfg.seeds))
                if verdict is not None:
                    break
            probes.append(Probe(load, seeds, att, bool(verdict), len(seeds) < len(cfg.seeds)))
            if progress:
                print(
                    f"goodput {task.workload} {error} {preset} {load:.3f}x: "
                    f"{100 * sum(att) / len(att):.1f}% over seeds {seeds} -> {'ok' if verdict else 'below'}",
                    file=sys.stderr,
                    flush=True,
                )
            return bool(verdict)

        res = search(ok, start=start, prune_below_start=prune, upper_hint=hint)
        return {**res, "ran_with_error": ran, "probes": [asdict(p) for p in probes]}

    for e in task.errors:
        # (load, upper) of the best baseline so far under this error
        best = tuple(cfg.floors[(task.workload, e)]) if task.chain and (task.workload, e) in cfg.floors else None
        for p in task.stacks:
            if task.chain and cfg.prune and best is not None:
                res = searcher(p, e, best[0], True, best[1])
            else:
                res = searcher(p, e, GOODPUT_START, False, None)
            rows.append({"workload": task.workload, "error": e, "preset": p, **res})
            if task.chain and res["load"] is not None and (best is None or res["load"] > best[0]):
                best = (res["load"], res["upper"])
    return task, rows, runs


def _tasks(cfg: GoodputConfig) -> list[Task]:
    tasks = []
    for w in cfg.workloads:
        base, others = _stacks_for(cfg, w)
        if base:
            tasks.append(Task(w, tuple(cfg.errors), tuple(base), True))
        tasks += [Task(w, (e,), (p,), False) for e in cfg.errors for p in others]
    # Baseline chains first: they are the long ones (a worker pool takes tasks in order).
    return sorted(tasks, key=lambda t: not t.chain)


def run_goodput(cfg: GoodputConfig, progress: bool = True) -> dict:
    cfg = cfg.resolve()
    t0 = time.perf_counter()
    caps = {w: cfg.capacities[w] for w in cfg.workloads if w in cfg.capacities}
    todo = [w for w in cfg.workloads if w not in caps]
    caps.update(
        dict(
            matrix._map(
                matrix._capacity_job,
                [(w, cfg.probe_n, cfg.duration_s, cfg.pd_first_token) for w in todo],
                cfg.processes,
                progress,
                "capacity",
            )
        )
    )
    tasks = _tasks(cfg)
    done = matrix._map(
        _run_task, [(t, caps[t.workload], cfg, progress) for t in tasks], cfg.processes, progress, "goodput"
    )
    out = summarize(cfg, caps, done)
    out["wall_s"] = time.perf_counter() - t0
    out["capacity_reused"] = sorted(set(cfg.workloads) - set(todo))
    return out


def summarize(cfg: GoodputConfig, caps: dict, done: list) -> dict:
    known = stacks.presets()
    by_key: dict[tuple, dict] = {}
    runs = []
    for task, rows, rs in done:
        for row in rows:
            by_key[(row["workload"], row["error"], row["preset"])] = row
        runs += [{"workload": task.workload, **r} if task is not None else r for r in rs]
    results = []
    per_workload = []
    for w in cfg.workloads:
        base, others = _stacks_for(cfg, w)
        cap = caps[w]["req_s"]
        for e in cfg.errors:
            entries = []
            for p in base + others:
                if (w, e, p) not in by_key:  # a merge of parts that did not run it
                    continue
                r = by_key[(w, e, p)]
                entries.append(
                    {
                        "workload": w,
                        "error": e,
                        "preset": p,
                        "kind": known[p].kind,
                        "goodput_load": r["load"],
                        "goodput_req_s": r["load"] * cap if r["load"] is not None else 0.0,
                        "upper_load": r["upper"],
                        "capped": r["capped"],
                        "pruned": r["pruned"],
                        "ran_with_error": r["ran_with_error"],
                        "probes": r["probes"],
                    }
                )
            results += entries
            bs = [x for x in entries if x["kind"] == "baseline" and x["goodput_load"] is not None]
            strongest = max(bs, key=lambda x: x["goodput_load"]) if bs else None
            for x in entries:
                if x["kind"] == "baseline":
                    continue
                ratio = lo = hi = None
                if strongest is not None and x["goodput_load"] is not None:
                    g, gb = x["goodput_load"], strongest["goodput_load"]
                    ratio = g / gb
                    # Bounds from the brackets: each goodput is in [load, upper).
                    lo = g / strongest["upper_load"] if strongest["upper_load"] else None
                    hi = x["upper_load"] / gb if x["upper_load"] else None
                per_workload.append(
                    {
                        "workload": w,
                        "error": e,
                        "preset": x["preset"],
                        "goodput_load": x["goodput_load"],
                        "goodput_req_s": x["goodput_req_s"],
                        "strongest_baseline": strongest["preset"] if strongest else None,
                        "strongest_load": strongest["goodput_load"] if strongest else None,
                        "strongest_req_s": strongest["goodput_req_s"] if strongest else 0.0,
                        "ratio": ratio,
                        "ratio_low": lo,
                        "ratio_high": hi,
                        "meets_1_3": ratio is not None and ratio >= 1.3,
                    }
                )
    summary = []
    for e in cfg.errors:
        for p in dict.fromkeys(r["preset"] for r in per_workload):
            rows = [r for r in per_workload if r["error"] == e and r["preset"] == p]
            if rows:
                summary.append(
                    {
                        "error": e,
                        "preset": p,
                        "workloads": len(rows),
                        "meets_1_3": sum(r["meets_1_3"] for r in rows),
                        "line": f"{p}: goodput >= 1.3x the strongest baseline on "
                        f"{sum(r['meets_1_3'] for r in rows)} of {len(rows)} workloads (predictor error {e})",
                    }
                )
    c = asdict(cfg)
    c.pop("capacities")
    c["floors"] = [{"workload": w, "error": e, "load": f[0], "upper": f[1]} for (w, e), f in cfg.floors.items()]
    return {
        "config": {
            **c,
            "goodput_attainment": matrix.GOODPUT_ATTAINMENT,
            "start": GOODPUT_START,
            "max": GOODPUT_MAX,
            "min": GOODPUT_MIN,
            "resolution": GOODPUT_RESOLUTION,
        },
        "capacity": caps,
        "results": results,
        "vs_strongest": per_workload,
        "summary": summary,
        "runs": len(runs),
        "run_wall_s": sum(r["wall_s"] for r in runs),
        "run_log": runs,
    }


def _load(x):
    return "none" if x is None else f"{x:.3f}x"


def _probe_list(ps: list) -> str:
    out = []
    for p in sorted(ps, key=lambda p: p["load"]):
        m = 100 * sum(p["attainment"]) / len(p["attainment"])
        tag = "" if not p["stopped_early"] else f" ({len(p['seeds'])} seed{'s' if len(p['seeds']) > 1 else ''})"
        out.append(f"{p['load']:.3f}: {m:.1f}{tag}")
    return "; ".join(out)


def markdown(g: dict, command: str = "") -> str:
    cfg = g["config"]
    out = ["# Goodput, searched", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out += [
        f"Goodput: the highest load (x capacity) with mean attainment >= {100 * cfg['goodput_attainment']:g}% over "
        f"seeds {tuple(cfg['seeds'])}, ~{cfg['duration_s']:g} s of arrivals per run; bracket from "
        f"{cfg['start']:g}x (doubling up to {cfg['max']:g}x, halving down to {cfg['min']:g}x), then geometric "
        f"bisection to hi/lo <= {cfg['resolution']:g}. Assumes attainment falls with load: every probe is listed. "
        f"{g['runs']} runs ({g['run_wall_s']:.0f} s of simulation) in {g.get('wall_s', 0):.0f} s wall on "
        f"{cfg['processes']} process(es); pruning {'on' if cfg['prune'] else 'off'}; baselines' exact-predictor "
        f"runs stand for every error: {'yes' if cfg['copy_exact_baselines'] else 'no'}.",
    ]
    if cfg.get("pd_first_token", "prefill") == "decode":
        out[-1] += (
            " P/D first tokens are dated at the decode's first step, where a client behind vLLM's P/D proxy sees them."
        )
    if g.get("merged_from"):
        out += ["", f"Merged from {len(g['merged_from'])} parts (wall is their sum):", ""]
        out += [f"- `{p['command'] or p['path']}` ({p['wall_s'] or 0:.0f} s)" for p in g["merged_from"]]
    out += ["", "## Summary", ""]
    out += [f"- {s['line']}" for s in g["summary"]]
    out += [
        "",
        "| workload | error | stack | goodput x cap | req/s | strongest baseline | its x cap | its req/s | ratio | "
        "ratio bounds | >= 1.3x |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in g["vs_strongest"]:
        b = (
            "-"
            if r["ratio"] is None
            else f"[{'-' if r['ratio_low'] is None else format(r['ratio_low'], '.2f')}, "
            f"{'-' if r['ratio_high'] is None else format(r['ratio_high'], '.2f')}]"
        )
        out.append(
            f"| {r['workload']} | {r['error']} | {r['preset']} | {_load(r['goodput_load'])} | "
            f"{r['goodput_req_s']:.1f} | "
            f"{r['strongest_baseline'] or '-'} | {_load(r['strongest_load'])} | {r['strongest_req_s']:.1f} | "
            f"{'-' if r['ratio'] is None else format(r['ratio'], '.2f') + 'x'} | {b} | "
            f"{'yes' if r['meets_1_3'] else 'no'} |"
        )
    out += [
        "",
        "## Every stack and its probes (load x capacity: mean attainment %; seeds run when stopped early)",
        "",
        "| workload | error | stack | goodput x cap | req/s | first failing load | probes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in g["results"]:
        gl = (
            f"< {r['upper_load']:.3f}x (pruned)"
            if r["pruned"]
            else (f">= {_load(r['goodput_load'])} (cap)" if r["capped"] else _load(r["goodput_load"]))
        )
        err = r["error"] if r["ran_with_error"] == r["error"] else f"{r['error']} (= {r['ran_with_error']})"
        out.append(
            f"| {r['workload']} | {err} | {r['preset']} | {gl} | {r['goodput_req_s']:.1f} | "
            f"{_load(r['upper_load'])} | {_probe_list(r['probes'])} |"
        )
    out += ["", "## Capacity (req/s at 1.0x)", ""]
    out += [f"- {w}: {c['req_s']:.2f} req/s ({c.get('stack', '?')})" for w, c in g["capacity"].items()]
    return "\n".join(out) + "\n"


def load_capacities(path: str) -> dict:
    """The capacities of a matrix.json or goodput.json (its "capacity" object), to reuse."""
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:  # ValueError: not JSON, not UTF-8
        raise ValueError(f"--capacities {path}: not readable JSON ({e})") from None
    caps = m.get("capacity", m) if isinstance(m, dict) else None
    if not isinstance(caps, dict):
        raise ValueError(f"--capacities {path}: needs a capacity object (workload -> capacity)")
    c = m.get("config") if isinstance(m.get("config"), dict) else {}
    # A P/D capacity depends on where the first token is dated; reports from before the option: prefill.
    dating = c.get("pd_first_token", "prefill") if c else None
    return {"capacity": caps, "duration_s": c.get("duration_s"), "pd_first_token": dating}


def floors_from(path: str) -> dict:
    """(workload, error) -> (load, upper) of the strongest baseline in a goodput.json: a later
    part that searches more baselines starts its chain there (`--prune-from`); exact under
    monotonicity as within one run."""
    try:
        with open(path) as f:
            g = json.load(f)
        rows = g["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--prune-from {path}: not a readable goodput.json ({e})") from None
    out = {}
    for r in rows:
        if r.get("kind") == "baseline" and r.get("goodput_load") is not None:
            key = (r["workload"], r["error"])
            if key not in out or r["goodput_load"] > out[key][0]:
                out[key] = (r["goodput_load"], r["upper_load"])
    return out


def merge(paths: list[str]) -> dict:
    """One goodput report from the goodput.json of runs that each did a part (e.g. one
    workload each): the strongest baseline, the ratios and the summary are recomputed over
    every row present (a row in several parts is taken from the last). Parts must share the
    window, seeds and search constants, and agree on every shared workload's capacity."""
    if not paths:
        raise ValueError("--merge: give at least one goodput.json")
    parts = []
    for path in paths:
        try:
            with open(path) as f:
                g = json.load(f)
        except (OSError, ValueError) as e:  # ValueError: not JSON, not UTF-8
            raise ValueError(f"--merge {path}: not a readable goodput.json ({e})") from None
        if not isinstance(g, dict) or not all(k in g for k in ("config", "capacity", "results", "run_log")):
            raise ValueError(f"--merge {path}: not a goodput.json (needs config, capacity, results, run_log)")
        parts.append((path, g))
    same = ("duration_s", "seeds", "goodput_attainment", "start", "max", "min", "resolution", "prune", "pd_first_token")
    c0 = parts[0][1]["config"]
    caps, rows, runs = {}, [], []
    for path, g in parts:
        g["config"].setdefault("pd_first_token", "prefill")  # reports from before the option
        for k in same:
            if g["config"].get(k) != c0.get(k):
                raise ValueError(f"--merge {path}: config {k} = {g['config'].get(k)!r}, the first part {c0.get(k)!r}")
        for w, c in g["capacity"].items():
            if w in caps and caps[w]["req_s"] != c["req_s"]:
                raise ValueError(
                    f"--merge {path}: workload {w!r} capacity {c['req_s']:.4g} req/s, "
                    f"another part {caps[w]['req_s']:.4g}"
                )
            caps[w] = c
        rows += [
            {
                "workload": r["workload"],
                "error": r["error"],
                "preset": r["preset"],
                "load": r["goodput_load"],
                "upper": r["upper_load"],
                "capped": r["capped"],
                "pruned": r["pruned"],
                "ran_with_error": r["ran_with_error"],
                "probes": r["probes"],
            }
            for r in g["results"]
        ]
        runs += g["run_log"]
    union = lambda key: tuple(dict.fromkeys(x for _, g in parts for x in g["config"][key]))  # noqa: E731
    cfg = GoodputConfig(
        stacks=union("stacks"),
        workloads=union("workloads"),
        errors=union("errors"),
        seeds=tuple(c0["seeds"]),
        duration_s=c0["duration_s"],
        processes=max(g["config"]["processes"] for _, g in parts),
        prune=c0["prune"],
        copy_exact_baselines=all(g["config"]["copy_exact_baselines"] for _, g in parts),
        pd_first_token=c0["pd_first_token"],
    )
    out = summarize(cfg, caps, [(None, rows, runs)])
    out["wall_s"] = sum(g.get("wall_s", 0.0) for _, g in parts)
    out["merged_from"] = [{"path": p, "command": g.get("command", ""), "wall_s": g.get("wall_s")} for p, g in parts]
    return out


def write(g: dict, out_dir: str, command: str = "") -> dict:
    os.makedirs(out_dir, exist_ok=True)
    paths = {"json": os.path.join(out_dir, "goodput.json"), "md": os.path.join(out_dir, "goodput.md")}
    with open(paths["json"], "w") as f:
        json.dump({**g, "command": command}, f, indent=1)
    with open(paths["md"], "w") as f:
        f.write(markdown(g, command))
    return paths
