"""Merge several `slocore bench matrix` outputs into one matrix (`slocore bench matrix --merge`).

A full matrix is costly, so it is often run in parts (the baselines once, the stacks under
test again after each change). Merging rebuilds one matrix from the parts' cells: the
strongest baseline of every cell, the differences, goodput and the summary are computed anew
over every preset present, by the same code as a single run (`matrix.summarize`). A cell
present in several files is taken from the last one.

The parts must describe the same experiment: every workload's capacity (and so its rates and
request counts) and the window length must agree, or the merge is refused with the
workload named.

`copy_exact_baselines`: a model-free baseline's cell (`matrix.MODEL_FREE_BASELINES`) run with
the exact predictor also stands for the other predictor errors present (it uses no latency
model, so it gives the same result under every error; docs/benchmark.md "Definitions").
Per-seed TTFT/TPOT p99 and cost are not kept in matrix.json; each seed gets its cell's mean,
so the merged means equal the parts'.
"""

from __future__ import annotations

import json

from slocore.sim import stacks
from slocore.sim.matrix import ERRORS, Job, MatrixConfig, model_free, summarize


def _union(seqs) -> tuple:
    return tuple(dict.fromkeys(x for s in seqs for x in s))


def load(path: str) -> dict:
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:  # ValueError: not JSON, not UTF-8
        raise ValueError(f"--merge {path}: not a readable matrix.json ({e})") from None
    if not isinstance(m, dict) or not all(k in m for k in ("config", "capacity", "cells")):
        raise ValueError(f"--merge {path}: not a matrix.json (needs config, capacity, cells)")
    return m


def merge(paths: list[str], copy_exact_baselines: bool = False) -> dict:
    """One matrix (the shape `matrix.run_matrix` returns) from the matrix.json files `paths`."""
    if not paths:
        raise ValueError("--merge: give at least one matrix.json")
    parts = [load(p) for p in paths]
    caps, requests, duration, dating = {}, {}, None, None
    for path, m in zip(paths, parts):
        d = m["config"]["duration_s"]
        if duration is not None and d != duration:
            raise ValueError(f"--merge {path}: window of {d:g} s, the others {duration:g} s")
        duration = d
        t = m["config"].get("pd_first_token", "prefill")  # matrices from before the option: prefill
        if dating is not None and t != dating:
            raise ValueError(f"--merge {path}: P/D first tokens dated at the {t}, the others at the {dating}")
        dating = t
        for w, c in m["capacity"].items():
            if w in caps and caps[w]["req_s"] != c["req_s"]:
                raise ValueError(
                    f"--merge {path}: workload {w!r} has capacity {c['req_s']:.4g} req/s, "
                    f"another part {caps[w]['req_s']:.4g} (not the same experiment)"
                )
            caps[w] = c
            requests.setdefault(w, {}).update(m["config"]["requests"][w])
    known = stacks.presets()
    cells = {}
    for path, m in zip(paths, parts):
        for c in m["cells"]:
            if c["preset"] not in known:
                raise KeyError(f"--merge {path}: preset {c['preset']!r} unknown or not in this build")
            cells[(c["workload"], c["error"], c["load"], c["preset"])] = c
    errors = tuple(e for e in ERRORS if any(k[1] == e for k in cells))
    if copy_exact_baselines:
        for (w, e, l, p), c in list(cells.items()):
            if e == "exact" and model_free(p):
                for e2 in errors:
                    cells.setdefault((w, e2, l, p), {**c, "error": e2, "ran_with_error": c.get("ran_with_error", e)})
    results = []
    for (w, e, l, p), c in cells.items():
        for i, seed in enumerate(c["seeds"]):
            r = {
                "attainment": c["attainment"][i],
                "ttft_p99": c["ttft_p99"],
                "tpot_p99": c["tpot_p99"],
                "cost": c["cost"],
                "finished": c["finished"][i],
                "requests": c["requests"][i],
                "ran_with_error": c.get("ran_with_error", e),
            }
            rate = l * caps[w]["req_s"] * caps[w].get("rate_arg_per_req_s", 1.0)  # as run_matrix
            results.append((Job(p, w, l, seed, e, rate, c["requests"][i], dating), r))
    cfgs = [m["config"] for m in parts]
    cfg = MatrixConfig(
        presets=_union(c["presets"] for c in cfgs),
        workloads=_union(c["workloads"] for c in cfgs),
        loads=tuple(sorted(set(_union(c["loads"] for c in cfgs)))),
        seeds=tuple(sorted(set(_union(c["seeds"] for c in cfgs)))),
        errors=errors,
        duration_s=duration,
        processes=max(c["processes"] for c in cfgs),
        pd_first_token=dating,
    )
    sizes = {(w, float(l)): n for w, per in requests.items() for l, n in per.items()}
    out = summarize(cfg, caps, sizes, results)
    out["runs"] = sum(m.get("runs", 0) for m in parts)
    out["wall_s"] = sum(m.get("wall_s", 0.0) for m in parts)
    out["merged_from"] = [{"path": p, "command": m.get("command", "")} for p, m in zip(paths, parts)]
    out["copy_exact_baselines"] = copy_exact_baselines
    return out
