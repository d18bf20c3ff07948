"""Sweep a scenario over loads x variants x seeds (a tqdm progress bar on stderr); the rows
feed the table, JSON and plot of `slocore simulate`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tqdm import tqdm

from slocore.sim.runner import simulate
from slocore.sim.scenarios import Scenario


@dataclass
class Row:
    variant: str
    load: float
    seed: int
    summary: dict
    stats: dict
    config: dict
    wall_s: float


def run_scenario(sc: Scenario, *, loads=None, variants=None, seeds=(0,), overrides=None, progress=True) -> list[Row]:
    avail = sc.available_variants()
    chosen = list(variants) if variants else list(avail)
    for v in chosen:
        if v not in sc.variants:
            raise ValueError(f"variant {v!r} not in scenario {sc.name!r} (known: {', '.join(sc.variants)})")
        if v not in avail:
            raise ValueError(f"variant {v!r} needs a policy this build does not register")
    loads = tuple(loads or sc.loads)
    jobs = [(v, ld, s) for ld in loads for s in seeds for v in chosen]
    rows = []
    with tqdm(jobs, desc=sc.name, unit="run", disable=not progress) as bar:
        for v, load, seed in bar:
            bar.set_postfix_str(f"{v} @ {load:g}")
            kw = {**sc.cluster, **sc.variants[v], **(overrides or {})}
            t = time.perf_counter()
            res = simulate(sc.workload(load, seed), seed=seed, **kw)
            rows.append(Row(v, load, seed, res.summary, res.stats, res.config, time.perf_counter() - t))
    return rows
