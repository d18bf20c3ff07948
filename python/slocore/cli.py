"""`slocore` command line: simulate | scenarios | policies | fit | profiles | profile | presets | serve |
engine | bench serve|matrix|goodput|twin|live."""

from __future__ import annotations

import argparse
import json
import sys

from slocore import __version__, cli_args
from slocore.roles import COLOCATED, PD_FIRST_TOKEN, ROLES


def cmd_simulate(a) -> int:
    from slocore.sim import experiment, report, scenarios

    sc = scenarios.get(a.scenario)
    overrides = {}
    for key in ("profile", "instances", "noise_sigma", "belief_scale", "max_instances", "pd_first_token"):
        v = getattr(a, key)
        if v is not None:
            overrides[key] = v.split(",") if key == "profile" and "," in v else v  # a,b,...: one per instance
    rows = experiment.run_scenario(
        sc,
        loads=a.loads,
        variants=a.variants.split(",") if a.variants else None,
        seeds=a.seeds,
        overrides=overrides,
        progress=not a.quiet,
    )
    if a.json:
        print(report.to_json(sc, rows))
    else:
        print(report.table(sc, rows))
    if a.plot:
        report.plot(sc, rows, a.plot)
        print(f"plot written to {a.plot}", file=sys.stderr)
    return 0


def cmd_scenarios(a) -> int:
    from slocore.sim import scenarios

    for name, sc in sorted(scenarios.all_scenarios().items()):
        missing = sorted(set(sc.variants) - set(sc.available_variants()))
        print(f"{name:28s} {sc.description}")
        print(f"{'':28s}   source: {sc.source}; loads: {', '.join(f'{l:g}' for l in sc.loads)} {sc.load_unit}")
        if missing:
            print(f"{'':28s}   (not in this build: {', '.join(missing)})")
    return 0


def cmd_policies(a) -> int:
    """Every registered global policy, batch scheduler and scaler with its parameter table."""
    from slocore import registry

    infos = registry.entries(a.kind, a.name)
    print(
        json.dumps(infos, indent=1) if a.json else registry.markdown(infos) if a.markdown else registry.text(infos),
        end="" if not a.json else "\n",
    )
    return 0


def cmd_fit(a) -> int:
    from slocore import fitting

    path = a.csv or fitting.sample_path(a.model)
    if not a.csv:
        print(f"no CSV given: fitting the bundled sample {path}", file=sys.stderr)
    out = fitting.fit(a.model, path)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    for part in ("prefill", "decode"):
        if part in out:
            print(
                f"{part}: "
                + ", ".join(f"{k}={v:.6g}" for k, v in out[part]["coeffs"].items())
                + f"  (rms rel err {out[part]['rms_rel_error']:.3%}, n={out[part]['samples']})"
            )
    if "coeffs" in out:
        print(
            ", ".join(f"{k}={v:.6g}" for k, v in out["coeffs"].items())
            + f"  (rms rel err {out['rms_rel_error']:.3%}, n={out['samples']})"
        )
    if "per_request" in out:
        print("per_request: " + ", ".join(f"{k}={v:.6g}" for k, v in out["per_request"].items()))
    return 0


def cmd_profiles(a) -> int:
    from slocore.profiles import list_profiles, load_profile

    if a.name:
        print(json.dumps(load_profile(a.name), indent=1))
        return 0
    for n in list_profiles():
        p = load_profile(n)
        print(f"{n:32s} {p.get('description', '')}")
    return 0


def cmd_serve(a) -> int:
    from slocore.serve import router

    cfg = router.config_from_args(a)
    if cfg.workers > 1:  # several data-path processes, the policy in one (serve.policy_host)
        from slocore.serve import policy_host

        return policy_host.main(cfg)
    return router.run(cfg)


def cmd_engine(a) -> int:
    from slocore.serve import engine

    return engine.main(a)


def cmd_bench_serve(a) -> int:
    from slocore.serve import loadgen

    return loadgen.main(a)


def cmd_bench_live(a) -> int:
    from slocore.live_bench import cli

    return cli.main(a)


def cmd_profile(a) -> int:
    from slocore.twin import profiler

    return profiler.main(a)


def cmd_bench_twin(a) -> int:
    from slocore.twin import compare

    return compare.main(a)


def _add_serving(sub) -> None:
    sv = sub.add_parser("serve", help="OpenAI-compatible SLO-aware router (default: one embedded emulated engine)")
    sv.add_argument("--config", help="YAML config: backends with roles, policies, SLOs (docs/serving.md)")
    sv.add_argument("--host")
    sv.add_argument("--port", type=cli_args.port)
    sv.add_argument("--policy", help="colocated global policy name (overrides the config)")
    sv.add_argument(
        "--policy-params", dest="policy_params", type=cli_args.json_object, help="its parameters as a JSON object"
    )
    sv.add_argument(
        "--workers",
        type=cli_args.int_in(1, 256),  # the config schema's bound (serve/config.py)
        help="data-path processes (default 1; docs/serving.md, 'Several workers')",
    )
    sv.set_defaults(func=cmd_serve)
    en = sub.add_parser("engine", help="emulated engine: vLLM's OpenAI API, token timing from a hardware profile")
    en.add_argument("--profile", default="h100-llama2-7b", help="hardware profile (see `slocore profiles`)")
    en.add_argument("--scheduler", default="sarathi_fcfs", help="batch scheduler name")
    en.add_argument(
        "--scheduler-params", dest="scheduler_params", type=cli_args.json_object, help="its parameters as a JSON object"
    )
    en.add_argument("--time-scale", dest="time_scale", type=float, default=1.0, help="multiply iteration times")
    en.add_argument("--max-num-seqs", dest="max_num_seqs", type=int, default=256)
    en.add_argument("--model", default="slocore-emulated")
    en.add_argument("--fault", help="fault injection for tests: die_after:N or hang_after:N (tokens)")
    en.add_argument(
        "--role",
        choices=ROLES,
        default=COLOCATED,
        help="the instance's role as its scheduler sees it (decode: a P/D decode instance's rules)",
    )
    en.add_argument("--host", default="127.0.0.1")
    en.add_argument("--port", type=cli_args.port, default=8100)
    en.set_defaults(func=cmd_engine)
    be = sub.add_parser("bench", help="benchmarks against a live endpoint")
    bsub = be.add_subparsers(dest="bench_cmd", required=True)
    bs = bsub.add_parser("serve", help="replay a workload or trace against an OpenAI endpoint")
    from slocore.serve.loadgen import add_arguments

    add_arguments(bs)
    bs.set_defaults(func=cmd_bench_serve)
    from slocore.sim.bench_cli import add_matrix_arguments

    add_matrix_arguments(
        bsub.add_parser("matrix", help="presets x workloads x loads x seeds x predictor error (simulator)")
    )
    from slocore.sim.goodput_cli import add_arguments as add_goodput_arguments

    add_goodput_arguments(
        bsub.add_parser("goodput", help="goodput searched per workload and stack: highest load with >= 90% attainment")
    )
    bt = bsub.add_parser("twin", help="one trace on the real engine(s) and in the simulator with a measured profile")
    from slocore.twin.compare import add_arguments as add_twin_arguments

    add_twin_arguments(bt)
    bt.set_defaults(func=cmd_bench_twin)
    bl = bsub.add_parser("live", help="serving stacks compared on real engines: paired, interleaved, with CIs")
    from slocore.live_bench.cli import add_arguments as add_live_arguments

    add_live_arguments(bl)
    bl.set_defaults(func=cmd_bench_live)
    po = sub.add_parser("profile", help="measure a running engine's latency model into a profile JSON")
    from slocore.twin.profiler import add_arguments as add_profile_arguments

    add_profile_arguments(po)
    po.set_defaults(func=cmd_profile)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="slocore", description="SLO-aware scheduling core for LLM serving")
    p.add_argument("--version", action="version", version=f"slocore {__version__}")
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("simulate", help="run a built-in scenario in the cluster simulator (default: 'default')")
    s.add_argument("--scenario", default="default", help="scenario name (see `slocore scenarios`)")
    s.add_argument("--variants", help="comma-separated variants of the scenario (default: all available)")
    s.add_argument("--loads", type=cli_args.positive_floats, help="comma-separated loads (default: the scenario's)")
    s.add_argument("--seeds", type=cli_args.seeds, default=[0], help="comma-separated seeds (default: 0)")
    s.add_argument(
        "--profile",
        help="hardware profile override (see `slocore profiles`); comma-separated: one "
        "per colocated instance (a mixed cluster)",
    )
    s.add_argument("--instances", type=int, help="colocated instance count override")
    s.add_argument("--max-instances", dest="max_instances", type=int, help="scale-out cap override")
    s.add_argument("--noise-sigma", dest="noise_sigma", type=float, help="log-normal noise on iteration times")
    s.add_argument(
        "--belief-scale",
        dest="belief_scale",
        type=float,
        help="policies' latency model = truth x this (mis-calibration, e.g. 1.2)",
    )
    s.add_argument(
        "--pd-first-token",
        dest="pd_first_token",
        choices=PD_FIRST_TOKEN,
        help="P/D scenarios: date the first token at the prefill's end (default) or at the decode's first "
        "step, where a client behind vLLM's P/D proxy protocol sees it",
    )
    s.add_argument("--plot", help="write attainment/latency/cost vs load to this PNG")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_simulate)
    sc = sub.add_parser("scenarios", help="list built-in scenarios")
    sc.set_defaults(func=cmd_scenarios)
    po = sub.add_parser("policies", help="list global policies, batch schedulers and scalers with their parameters")
    po.add_argument("name", nargs="?", help="show only this name")
    po.add_argument("--kind", choices=["global_policy", "batch_scheduler", "scaler"])
    po.add_argument("--json", action="store_true")
    po.add_argument("--markdown", action="store_true", help="as docs/policies.md")
    po.set_defaults(func=cmd_policies)
    f = sub.add_parser("fit", help="fit a latency model to measurements (CSV)")
    f.add_argument("--model", default="stage", choices=["stage", "per_request", "tps"])
    f.add_argument("csv", nargs="?", help="measurements (default: bundled sample for --model stage)")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_fit)
    pr = sub.add_parser("profiles", help="list hardware profiles, or show one")
    pr.add_argument("name", nargs="?")
    pr.set_defaults(func=cmd_profiles)
    from slocore.sim.bench_cli import add_presets_parser

    add_presets_parser(sub)
    _add_serving(sub)
    a = p.parse_args(argv)
    if not a.cmd:
        a = p.parse_args(["simulate"] + list(argv or []))
    try:
        return a.func(a)
    except (ValueError, KeyError) as e:  # a KeyError's str() quotes its message
        print(f"slocore: error: {e.args[0] if isinstance(e, KeyError) and e.args else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
