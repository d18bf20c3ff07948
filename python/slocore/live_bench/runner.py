"""The run loop of ``slocore bench live``: start the engines of every setting (vLLM's default
scheduler, and the slocore scheduler through the plugin) side by side, profile them (once:
the same hardware in every setting), set the rate to a fraction of the measured capacity,
then per trace replay it through every (setting, stack) unit in an interleaved, paired
order: repetition r runs every unit once, back to back, starting at unit r mod U (ABC, BCA,
CAB, ...: every unit takes every position equally often), so a stack over vLLM's scheduler
and `slocore` over the plugin are paired within one stretch of time (`across_settings`).
With `interleave=False` the settings run as blocks, one engine set at a time (half the
memory), and only stacks of one setting are paired. Each run gets a fresh router process, the
same arrivals and lengths, and prompt texts no earlier run used (no prefix cache carried
across runs).

The rate is `load` times the trace's capacity on these engines: by default the measured
one (`measure_capacity`: the edge where the reference stack, least-outstanding on vLLM's
own scheduler, still meets CAPACITY_ATTAINMENT of the SLOs: the matrix's definition, on the
real engines); `capacity_from="profile"` takes the profiles' saturation estimate instead."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from slocore import _core
from slocore.live_bench import procs, stats
from slocore.live_bench import stacks as _stacks
from slocore.live_bench import traces as _traces

SETTINGS = ("default", "plugin")
CAPACITY_FROM = ("measured", "profile")
REFERENCE_STACK = "least_outstanding"  # the capacity's reference: what a serving team runs


@dataclass
class LiveConfig:
    engines: procs.EngineSpec
    stacks: list[str] = field(default_factory=lambda: list(_stacks.DEFAULT_STACKS))
    traces: list[str] = field(default_factory=lambda: list(_traces.TRACES))
    settings: list[str] = field(default_factory=lambda: list(SETTINGS))
    repetitions: int = 5
    load: float = 0.9
    requests: int = 200
    capacity: float | None = None  # req/s of all engines; None: capacity_from
    capacity_from: str = "measured"  # the reference stack's measured edge, or the profiles' estimate
    capacity_steps: int = 3  # bisection steps of the measured edge after bracketing it
    capacity_runs: int = 1  # runs per capacity probe; the probe's attainment is their median
    profile: str | None = None  # a profile (path or bundled name) instead of measuring
    profile_repeats: int = 1
    plugin_scheduler: str | None = None  # None: stacks.plugin_scheduler()
    plugin_params: dict | None = None  # the plugin scheduler's parameters (None: its defaults)
    interleave: bool = True  # both settings' engines at once, their runs interleaved (else blocks)
    seed: int = 0
    timeout_s: float = 300.0
    out_dir: str = "live-bench-out"

    def __post_init__(self):
        if not (isinstance(self.repetitions, int) and self.repetitions >= 1):
            raise ValueError(f"repetitions: must be an integer >= 1, got {self.repetitions!r}")
        if not (self.load > 0):
            raise ValueError(f"load: must be > 0 (a fraction of measured capacity), got {self.load!r}")
        if self.capacity is not None and not self.capacity > 0:
            raise ValueError(f"capacity: must be > 0 req/s, got {self.capacity!r}")
        if self.capacity_from not in CAPACITY_FROM:
            raise ValueError(f"capacity_from: must be one of {', '.join(CAPACITY_FROM)}, got {self.capacity_from!r}")
        if not (isinstance(self.capacity_steps, int) and 0 <= self.capacity_steps <= 8):
            raise ValueError(f"capacity_steps: must be an integer in [0, 8], got {self.capacity_steps!r}")
        if not (isinstance(self.capacity_runs, int) and 1 <= self.capacity_runs <= 9):
            raise ValueError(f"capacity_runs: must be an integer in [1, 9], got {self.capacity_runs!r}")
        bad = [s for s in self.settings if s not in SETTINGS]
        if bad or not self.settings:
            raise ValueError(f"settings: must be among {', '.join(SETTINGS)}, got {self.settings!r}")
        bad = [t for t in self.traces if t not in _traces.TRACES]
        if bad or not self.traces:
            raise ValueError(f"traces: must be among {', '.join(_traces.TRACES)}, got {self.traces!r}")
        if self.engines.kind == "urls" and len(self.settings) > 1:
            raise ValueError("settings: engines given by URL run as they are: give one setting (default)")


def _slim(summary: dict) -> dict:
    def q(m):
        d = summary.get(m) or {}
        return {k: d.get(k) for k in ("p50", "p90", "p99")}

    return {
        "finished": summary.get("finished"),
        "requests": summary.get("requests"),
        "ttft": q("ttft"),
        "tpot": q("tpot"),
        "throughput_tok_s": summary.get("throughput_tok_s"),
    }


def profile_engines(engines, cfg: LiveConfig, out: Path, progress: bool) -> list[str]:
    """One profile per engine (`slocore profile`), or cfg.profile for all (with each engine's
    own KV geometry when it reports one: see `with_engine_kv`)."""
    if cfg.profile:
        return [with_engine_kv(cfg.profile, e, out) for e in engines]
    from slocore.twin import profiler

    paths = []
    for e in engines:
        path = out / f"profile-{e.name}.json"
        prof = asyncio.run(
            profiler.measure(
                e.url, name=f"live-{e.name}", repeats=cfg.profile_repeats, progress=progress, seed=cfg.seed
            )
        )
        path.write_text(json.dumps(prof, indent=1) + "\n")
        paths.append(str(path.resolve()))
    return paths


def with_engine_kv(profile: str, engine, out: Path) -> str:
    """`profile` (path or bundled name), or a copy of it whose ``kv`` (block size, blocks) is
    the one `engine` reports (vLLM's ``cache_config_info``) when that differs: the router's
    prefix blocks must be the engine's blocks for precise mode to match its KV events."""
    import urllib.request

    from slocore.profiles import load_profile
    from slocore.twin.client import labels_of, parse_metrics

    try:
        with urllib.request.urlopen(engine.url + "/metrics", timeout=10) as r:
            info = labels_of(parse_metrics(r.read().decode(errors="replace")), "vllm:cache_config_info")
        bs, blocks = int(info["block_size"]), int(info["num_gpu_blocks"])
    except (OSError, ValueError, KeyError, TypeError):
        return profile  # no KV geometry reported: the profile's own
    prof = load_profile(profile)
    kv = prof.get("kv") or {}
    if kv.get("block_size") == bs and kv.get("num_blocks") == blocks:
        return profile
    prof["kv"] = {**kv, "block_size": bs, "num_blocks": blocks}
    path = out / f"profile-{engine.name}-engine-kv.json"
    path.write_text(json.dumps(prof, indent=1) + "\n")
    return str(path.resolve())


def capacity(profiles: list[str], w) -> float:
    """Requests/s all engines sustain on `w`'s mean lengths, by each one's profile (the
    digital twin's saturation estimate: full batches decoding, each request's prefill)."""
    from slocore.profiles import load_profile
    from slocore.twin.compare import saturation_rate

    return sum(saturation_rate(load_profile(p), w, 1) for p in profiles)


def block_size(profiles: list[str]) -> int:
    from slocore.profiles import load_profile

    return int((load_profile(profiles[0]).get("kv") or {}).get("block_size", 16))


KV_LINE = re.compile(
    r"backend (\S+): KV events: (\d+) batches, (\d+) blocks stored, (\d+) removed, (\d+) cleared; "
    r"(\d+) blocks held, (\d+) of them known to the router"
)


def kv_event_counts(router_log: str) -> dict:
    """Per backend, the router's last KV-event report (serve.kv_events): what precise mode saw."""
    out = {}
    for m in KV_LINE.finditer(router_log):
        keys = ("batches", "stored", "removed", "cleared", "held", "known")
        out[m.group(1)] = dict(zip(keys, (int(x) for x in m.groups()[1:])))
    return out


# vLLM holds back a streamed token whose text is still empty (an incomplete UTF-8 sequence;
# the tiny dummy-weight model makes many) unless the request asks for token ids: without them
# the client and the router would date such tokens, first ones included, at a later chunk.
VLLM_BODY = {"return_token_ids": True}


def client_settings(spec, engines) -> dict:
    """The load generator's settings for every stack on `engines` (loadgen.run keywords): the
    model name asked of the engines themselves (not of the router under test); on vLLM, token
    ids in the stream (VLLM_BODY); on engines this bench starts, each request's SLO in
    ``vllm_xargs`` as well as in the headers, so the plugin sees the SLOs behind a router that
    does not speak them (vllm-router)."""
    return {
        "model": procs.served_model(engines),
        "extra_body": VLLM_BODY if spec.kind == "vllm" else None,
        "slo_xargs": spec.kind != "urls",
    }


def one_run(
    stack,
    engines,
    profiles,
    w,
    prompts,
    out: Path,
    tag: str,
    bs: int,
    timeout: float,
    client: dict | None = None,
) -> dict:
    """One replay of `w` through `stack`. `client`: the load generator's request settings,
    the same for every stack (`client_settings`). A request the stack refuses (4xx) is a
    missed one, listed in errors."""
    from slocore.serve import loadgen

    la0 = os.getloadavg()[0]
    procs.wait_idle(engines)
    before = procs.prefix_cache_counters(engines)
    router = procs.start_router(stack, engines, profiles, out, tag, bs)
    t0 = time.time()
    try:
        router.wait_healthy(60)
        res = asyncio.run(
            loadgen.run(
                router.url,
                w,
                prompts=prompts,
                timeout=timeout,
                progress=False,
                refused_as_missed=True,
                **(client or {}),
            )
        )
    except RuntimeError as e:
        return {"stack": stack.name, "error": str(e)[:2000], "attainment": None, "started": t0}
    finally:
        router.stop()
    procs.wait_idle(engines)
    kv = kv_event_counts(router.log_tail(1 << 22)) if stack.kv_events else {}
    return {
        "stack": stack.name,
        "prefix_cache": procs.hit_rate(before, procs.prefix_cache_counters(engines)),
        "kv_events": kv,
        "attainment": stats.attainments(res),
        "ttft_by_class": stats.ttft_by_class(res["recorder"]),
        "failed": len(res["errors"]),
        "first_errors": res["errors"][:3],
        "wall_s": res["wall_s"],
        "loadavg_start": la0,
        "loadavg_end": os.getloadavg()[0],
        "started": t0,
        **_slim(res["summary"]),
    }


def measure_capacity(probe, start: float, steps: int, log=print) -> tuple[float, list[dict]]:
    """The highest rate (req/s) at which probe(rate) -> overall attainment stays at or above
    CAPACITY_ATTAINMENT: from `start` (the profiles' estimate) up or down by factors of 1.5
    until the edge is bracketed (at most 6 probes), then `steps` geometric bisections. Each
    probe is one run: the edge is as noisy as one run's attainment (a few points)."""
    from slocore.sim.matrix import CAPACITY_ATTAINMENT

    probes = []

    def ok(rate: float) -> bool:
        att = probe(rate)
        probes.append({"rate_req_s": rate, "attainment": att})
        log(f"bench live: capacity probe at {rate:.2f} req/s: attainment {att if att is None else round(att, 3)}")
        return att is not None and att >= CAPACITY_ATTAINMENT

    lo = hi = None
    rate = start
    for _ in range(6):
        if ok(rate):
            lo = rate
            if hi is not None:
                break
            rate *= 1.5
        else:
            hi = rate
            if lo is not None:
                break
            rate /= 1.5
    if lo is None:
        raise RuntimeError(
            f"capacity: {REFERENCE_STACK} met {CAPACITY_ATTAINMENT:.0%} of the SLOs at no probed rate down to "
            f"{hi:.3g} req/s: the SLOs are out of these engines' reach (probes: {probes})"
        )
    if hi is None:
        log(
            f"bench live: capacity not bracketed: {REFERENCE_STACK} met the SLOs up to {lo:.3g} req/s, the highest "
            "rate probed (too few requests to load the engines?): that rate is taken as the capacity"
        )
    else:
        for _ in range(steps):
            mid = (lo * hi) ** 0.5
            if ok(mid):
                lo = mid
            else:
                hi = mid
    return lo, probes


def engines_capacity(engines, profiles, trace, base, start, bs, cfg, out, client, log) -> tuple[float, list[dict]]:
    """measure_capacity of `trace` (workload `base`) on `engines` with the reference stack, from
    the profiles' estimate `start`; each probe is the median attainment of `cfg.capacity_runs`
    runs (each with fresh arrivals' prompt texts; one run's attainment moves by a few points
    near the edge); probe prompts share nothing with the runs'."""
    import statistics

    ref = _stacks.resolve(REFERENCE_STACK)
    n = 0

    def probe(rate: float) -> float | None:
        nonlocal n
        w = _traces.at_rate(base, rate)
        atts = []
        for _ in range(cfg.capacity_runs):
            n += 1
            salt = 10**6 * (1 + cfg.seed) + n  # the runs use salts below 10**6 per seed
            prompts, tag = _traces.prompts(w, salt=salt), f"capacity-{trace}-{n}"
            r = one_run(ref, engines, profiles, w, prompts, out, tag, bs, cfg.timeout_s, client)
            atts.append((r["attainment"] or {}).get("overall"))
        if any(a is None for a in atts):
            return None
        return statistics.median(atts)

    return measure_capacity(probe, start, cfg.capacity_steps, log)


def _start_setting(spec, setting: str, plugin: str, out: Path, profiles, log, plugin_params=None):
    sched = plugin if setting == "plugin" else None
    log(f"bench live: starting {spec.kind} engines ({'slocore ' + plugin if sched else 'default scheduler'})")
    return procs.start_engines(
        spec, sched, out, profiles if sched else None, scheduler_params=plugin_params if sched else None
    )


def across_settings(runs_by_setting: dict, live: list, classes: list[str]) -> dict:
    """stats.compare over every (stack, setting) of one trace, as units named "stack (setting)":
    the baselines are the baseline stacks over the engine's own scheduler (what a serving team
    runs), so `slocore (plugin)` is compared with them, paired by repetition. Meaningful when
    the settings' runs were interleaved (`interleave`): then repetition r of every unit ran in
    the same stretch of time."""
    from types import SimpleNamespace

    units, runs = [], []
    for setting, rs in runs_by_setting.items():
        for st in live:
            units.append(SimpleNamespace(name=f"{st.name} ({setting})", baseline=st.baseline and setting == "default"))
        runs += [{**r, "stack": f"{r['stack']} ({setting})"} for r in rs if r["attainment"]]
    return stats.compare(runs, units, classes)


def recompare(res: dict, classes: list[str]) -> None:
    """Recompute, in place, every comparison of a finished result (`run()`'s dict, e.g. read
    back from live.json) from its runs: what `slocore bench live --report` does."""
    from types import SimpleNamespace

    live = [SimpleNamespace(name=s["name"], baseline=bool(s["baseline"])) for s in res["stacks"]]
    for s in res["settings"].values():
        for t in s["traces"].values():
            t["comparison"] = stats.compare([r for r in t["runs"] if r.get("attainment")], live, classes)
    for trace in res.get("across_settings") or {}:
        runs = {name: s["traces"][trace]["runs"] for name, s in res["settings"].items() if trace in s["traces"]}
        res["across_settings"][trace] = across_settings(runs, live, classes)


def run(cfg: LiveConfig, progress: bool = True, log=print) -> dict:
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    live, notes = _stacks.available(cfg.stacks)
    if not live:
        raise ValueError("stacks: none of them can run here: " + "; ".join(notes))
    plugin = cfg.plugin_scheduler or _stacks.plugin_scheduler()
    if "plugin" in cfg.settings:  # a bad name or parameter fails here, not in the engines' start
        _core.make_batch_scheduler(plugin, dict(cfg.plugin_params or {}))
    label = plugin + (" " + json.dumps(cfg.plugin_params, sort_keys=True) if cfg.plugin_params else "")
    spec = cfg.engines
    if spec.kind == "vllm" and not spec.model_dir:
        spec.model_dir = procs.tiny_model(spec.vllm_python, out)
    total = len(cfg.settings) * len(cfg.traces) * cfg.repetitions * len(live)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="run", desc="bench live")
    interleave = cfg.interleave and len(cfg.settings) > 1
    results = {
        "settings": {},
        "notes": notes,
        "plugin_scheduler": plugin,
        "plugin_params": dict(cfg.plugin_params or {}),
        "stacks": [s.__dict__ for s in live],
        "interleaved": interleave,
    }
    if interleave:
        results["across_settings"] = {}
    classes = list(_traces.CLASSES)
    k, profiles, measured = 0, None, {}  # measured: per trace, (capacity, probes), first setting's engines
    # Interleaved: both engine sets run side by side (each pinned to the same cores; only one
    # set serves at a time), the default set first so that its profiles configure the plugin.
    # Otherwise one block per setting, the engines restarted in between.
    order = sorted(cfg.settings, key=lambda s: s != "default") if interleave else list(cfg.settings)
    groups = [order] if interleave else [[s] for s in order]
    for group in groups:
        engines: dict[str, list] = {}
        try:
            for setting in group:
                engines[setting] = _start_setting(spec, setting, plugin, out, profiles, log, cfg.plugin_params)
                # measured once, on the first engines: the same hardware in every setting
                profiles = profiles or profile_engines(engines[setting], cfg, out, progress)
            bs = block_size(profiles)
            client = {setting: client_settings(spec, engines[setting]) for setting in group}
            for setting in group:
                results["settings"][setting] = {
                    "engine_scheduler": label if setting == "plugin" else "engine default",
                    "engines": [e.url for e in engines[setting]],
                    "profiles": profiles,
                    "traces": {},
                }
            for trace in cfg.traces:
                base = _traces.make(trace, cfg.requests, cfg.seed)
                cap, probes = cfg.capacity or capacity(profiles, base), []
                if cfg.capacity is None and cfg.capacity_from == "measured":
                    if trace not in measured:
                        measured[trace] = engines_capacity(
                            engines[group[0]], profiles, trace, base, cap, bs, cfg, out, client[group[0]], log
                        )
                    cap, probes = measured[trace]
                w = _traces.at_rate(base, cfg.load * cap)
                runs: dict[str, list] = {s: [] for s in group}
                units = [(s, st) for s in group for st in live]
                for rep in range(cfg.repetitions):
                    # every unit once per repetition, starting at unit r mod U (ABC, BCA, ...)
                    for setting, st in units[rep % len(units) :] + units[: rep % len(units)]:
                        k += 1
                        if bar:
                            bar.set_postfix_str(f"{setting} {trace} rep {rep} {st.name}")
                        r = one_run(
                            st,
                            engines[setting],
                            profiles,
                            w,
                            _traces.prompts(w, salt=k + 1000 * cfg.seed),
                            out,
                            f"{setting}-{trace}-{rep}-{st.name}",
                            bs,
                            cfg.timeout_s,
                            client[setting],
                        )
                        r["rep"] = rep
                        runs[setting].append(r)
                        if bar:
                            bar.update(1)
                for setting in group:
                    results["settings"][setting]["traces"][trace] = {
                        "capacity_req_s": cap,
                        "capacity_from": "given" if cfg.capacity else cfg.capacity_from,
                        "capacity_probes": probes,
                        "rate_req_s": cfg.load * cap,
                        "requests": len(w),
                        "runs": runs[setting],
                        "comparison": stats.compare([r for r in runs[setting] if r["attainment"]], live, classes),
                    }
                if interleave:
                    results["across_settings"][trace] = across_settings(runs, live, classes)
                # what is done so far survives a later failure
                (out / "live.partial.json").write_text(json.dumps(results, indent=1, default=lambda x: None))
        finally:
            for kids in engines.values():
                procs.stop_all(kids)
    if bar:
        bar.close()
    return results
