"""Sweep a scenario over loads x variants x seeds (a tqdm progress bar on stderr); the rows
feed the table, JSON and plot of `slocore simulate`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tqdm import tqdm

from slocore.sim import stacks
from slocore.sim.runner import simulate
from slocore.sim.scenarios import Scenario


def preset_variant(sc: Scenario, name: str) -> dict:
    """A preset as a variant of `sc`: its stack in the scenario's mode; a scaling preset may
    double the scenario's instances."""
    mode = sc.cluster.get("mode", "colocated")
    kw = stacks.preset(name, mode)
    n = (
        sc.cluster.get("instances", 2)
        if mode == "colocated"
        else (sc.cluster.get("prefill_instances", 1) + sc.cluster.get("decode_instances", 1))
    )
    return stacks.scaling_kwargs(kw, n)


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
    kwargs = {}
    for v in chosen:
        if v not in sc.variants and v in stacks.presets(include_unavailable=True):
            kwargs[v] = preset_variant(sc, v)  # a named stack (slocore.sim.stacks) on this scenario
            continue
        if v not in sc.variants:
            raise ValueError(
                f"variant {v!r} not in scenario {sc.name!r} and not a preset "
                f"(scenario: {', '.join(sc.variants)}; presets: {', '.join(stacks.presets())})"
            )
        if v not in avail:
            raise ValueError(f"variant {v!r} needs a policy this build does not register")
        kwargs[v] = sc.variants[v]
    loads = tuple(loads or sc.loads)
    jobs = [(v, ld, s) for ld in loads for s in seeds for v in chosen]
    rows = []
    with tqdm(jobs, desc=sc.name, unit="run", disable=not progress) as bar:
        for v, load, seed in bar:
            bar.set_postfix_str(f"{v} @ {load:g}")
            kw = {**sc.cluster, **kwargs[v], **(overrides or {})}
            t = time.perf_counter()
            res = simulate(sc.workload(load, seed), seed=seed, **kw)
            rows.append(Row(v, load, seed, res.summary, res.stats, res.config, time.perf_counter() - t))
    return rows
