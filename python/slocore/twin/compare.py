"""``slocore bench twin --url URL --profile my.json``: replay one trace against the real
engine(s) (through ``slocore bench serve``'s load generator) and in the simulator with the
measured profile, at several loads, and report how far the simulator is from the engine.

Load 1.0 is the profile's own capacity estimate (``saturation_rate``); ``--loads`` are
fractions of it, so the same command means the same thing on any engine. Errors are
``(sim - real) / real`` for TTFT, TPOT and E2E p50/p90/p99, and ``sim - real`` in points for
SLO attainment. SLOs default to multiples of the profile's own latencies (``default_slos``),
one rule for every engine.
"""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np

from slocore import cli_args

METRICS = ("ttft", "tpot", "e2e")
PCTS = ("p50", "p90", "p99")


def add_arguments(p) -> None:
    p.add_argument("--url", required=True, help="the real endpoint: one engine or `slocore serve` in front of several")
    p.add_argument("--profile", required=True, help="profile JSON from `slocore profile` (or a bundled name)")
    p.add_argument("--instances", type=int, default=1, help="engines behind --url (default 1)")
    p.add_argument(
        "--policy",
        default="least_outstanding",
        help="the router's policy, simulated for --instances > 1 (default least_outstanding)",
    )
    p.add_argument(
        "--loads",
        type=cli_args.positive_floats,
        default=[0.25, 0.5, 0.75, 1.0],
        help="comma-separated fractions of the profile's saturation rate (default 0.25,0.5,0.75,1.0)",
    )
    p.add_argument("--rate", type=float, help="saturation rate override, requests/s (default: from the profile)")
    p.add_argument("--workload", default="sharegpt_like", help="workload name (slocore.sim.workloads)")
    p.add_argument("--param", action="append", default=[], metavar="K=V", help="workload parameter (repeatable)")
    p.add_argument("--trace", help="replay this trace CSV instead of a workload")
    p.add_argument("-n", "--num-requests", dest="n", type=int, default=300, help="requests per load (default 300)")
    p.add_argument("--max-prompt", dest="max_prompt", type=int, default=512, help="clip prompt lengths (default 512)")
    p.add_argument("--max-output", dest="max_output", type=int, default=128, help="clip output lengths (default 128)")
    p.add_argument("--ttft-slo-ms", dest="ttft_slo_ms", type=float, help="TTFT SLO (default: see default_slos)")
    p.add_argument("--tpot-slo-ms", dest="tpot_slo_ms", type=float, help="TPOT SLO (default: see default_slos)")
    p.add_argument("--model", help="model name to send (default: the endpoint's first /v1/models)")
    p.add_argument("--timeout", type=float, default=600.0, help="per-request timeout (s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--engine-pid",
        type=int,
        default=None,
        help="pid of the engine server on this host: report how long it waited for a CPU per load (Linux)",
    )


def engine_kwargs(profile: dict) -> dict:
    """simulate() arguments that copy the measured engine's limits (vLLM's scheduler is
    decode-first with chunked prefill under a token budget: sarathi_fcfs)."""
    eng = profile.get("engine") or {}
    budget = int(eng.get("max_num_batched_tokens", 2048))
    bs = eng.get("batch_scheduler") or {"name": "sarathi_fcfs", "params": {"token_budget": budget}}
    return {
        "batch_scheduler": (bs["name"], dict(bs.get("params") or {})),
        "max_batch_tokens": budget,
        "max_num_seqs": int(eng.get("max_num_seqs", 256)),
    }


def frontend_s(profile: dict) -> float:
    return float((profile.get("frontend") or {}).get("ttft_overhead_s", 0.0))


def lag_per_token_rate(profile: dict) -> float:
    return float((profile.get("frontend") or {}).get("ttft_lag_per_token_rate", 0.0))


# The stream rate a token's delivery lag is read at: the instance's tokens in this window
# before it (a front end's backlog is its last few hundred milliseconds of work).
RATE_WINDOW_S = 0.25


def simulate(workload, profile: dict, *, instances: int = 1, policy: str = "least_outstanding", seed: int = 0):
    """The simulator as the twin of the measured engine(s): its limits from the profile; the
    front-end term (fitmodel) applied as a delay before the engine sees each request (the
    engine's arrivals shift by it); and the delivery lag (profiler._delivery_lag): each token
    reaches the client `ttft_lag_per_token_rate` x its instance's stream rate (tokens in the
    last RATE_WINDOW_S) after the engine made it, never before the token ahead of it. The
    summary is the one metrics definition over the client's times and the original arrivals."""
    from slocore import _core
    from slocore.sim.runner import requests_of, tdg_weights
    from slocore.sim.runner import simulate as sim

    o, k = frontend_s(profile), lag_per_token_rate(profile)
    w = workload
    if o > 0:
        w = workload._with(
            arrival=workload.arrival + o, ttft=np.maximum(workload.ttft - o, 1e-9), deadline=workload.deadline - o
        )
    res = sim(w, profile=profile, instances=instances, global_policy=policy, seed=seed, **engine_kwargs(profile))
    recs = res.recorder.records()
    made: dict[int, list] = {}
    for rec in recs:
        made.setdefault(rec.instance, []).append(rec.token_times)
    made = {i: np.sort(np.concatenate(ts)) for i, ts in made.items()}
    client, first_lags, last_lags = _core.Recorder(), [], []
    originals = {r.id: r for r in requests_of(workload)}
    for rec in recs:
        rid = rec.request.id
        client.add(originals[rid])
        t = np.asarray(rec.token_times, dtype=float)
        if len(t):
            mine = made[rec.instance]
            rate = (
                np.searchsorted(mine, t, "right") - np.searchsorted(mine, t - RATE_WINDOW_S, "right")
            ) / RATE_WINDOW_S
            seen = np.maximum.accumulate(t + k * rate)
            first_lags.append(seen[0] - t[0])
            last_lags.append(seen[-1] - t[-1])
            for x in seen:
                client.token(rid, float(x), rec.instance)
        if rec.outcome == _core.Outcome.REJECTED:
            client.reject(rid, rec.end_time, rec.reason)
        elif rec.outcome == _core.Outcome.FINISHED:
            client.finish(rid, float(seen[-1]) if len(t) else rec.end_time)
    w_p, w_d = tdg_weights(workload)
    s = dict(_core.summarize(client, _core.MetricsOptions(w_prefill=w_p, w_decode=w_d)))
    s["iterations"] = int(res.stats["iterations"])
    # the modelled lag, for the engine's view (compare with the real delivery lag)
    s["delivery_lag_first_mean"] = float(np.mean(first_lags)) if first_lags else 0.0
    s["delivery_lag_last_mean"] = float(np.mean(last_lags)) if last_lags else 0.0
    return s


def _step(co: dict, batch: float, ctx: float) -> float:
    return co["t_c"] + batch * (co["a_d"] * ctx + co["b_d"])


def _prefill(co: dict, L: float) -> float:
    return co["a_p"] * L * L + co["c_p"] * L


def full_batch_step(profile: dict, ctx: float) -> float:
    """The decode step of a full batch (max_num_seqs) at context `ctx`: the profile's own
    measured decode steps at that batch where it has them (each moved to `ctx` by the fitted
    a_d; their median), the fitted step otherwise. ProServe's step (Eq. 4-7) is linear in the
    batch, vLLM-CPU's measured step is convex (3.5 ms at B <= 8, 5 ms at 16, 7-8 ms at 32 in
    one profile), so the fit is a compromise that is low at the largest batch."""
    co = profile["per_request"]
    S = engine_kwargs(profile)["max_num_seqs"]
    fitted = _step(co, S, ctx)
    pts = [
        q
        for q in (profile.get("measured") or {}).get("points") or []
        if q.get("kind") == "decode" and q.get("decode_batch") == S and (q.get("seconds") or 0) > 0
    ]
    if not pts:
        return fitted
    moved = [q["seconds"] + S * co["a_d"] * (ctx - (q.get("decode_context") or ctx)) for q in pts]
    return max(1e-9, float(np.median(moved)))


def saturation_rate(profile: dict, workload, instances: int = 1) -> float:
    """Requests/s the profile says `instances` engines sustain on this workload's mean
    lengths: full batches (max_num_seqs) decoding at the measured full-batch step
    (full_batch_step), each request also paying its prefill."""
    co = profile["per_request"]
    S = engine_kwargs(profile)["max_num_seqs"]
    P, O = float(np.mean(workload.prompt_len)), float(np.mean(workload.output_len))
    per_req = O * full_batch_step(profile, P + O / 2) / S + _prefill(co, P)
    return instances / per_req


def default_slos(profile: dict, workload) -> tuple[float, float]:
    """(ttft_s, tpot_s): TTFT 5x a lone request's at the mean prompt; TPOT 2x the decode step
    of a full batch (max_num_seqs) at the mean context. Met at light load, missed near saturation."""
    co = profile["per_request"]
    S = engine_kwargs(profile)["max_num_seqs"]
    P, O = float(np.mean(workload.prompt_len)), float(np.mean(workload.output_len))
    ttft = 5 * (frontend_s(profile) + co["t_c"] + _prefill(co, P))
    return ttft, 2 * _step(co, S, P + O / 2)


def prepare(a, profile: dict):
    """The base workload (rate not yet set): clipped lengths, the SLOs."""
    from slocore.serve.loadgen import build_workload

    ns = type("A", (), dict(trace=a.trace, workload=a.workload, param=a.param, n=a.n, rate_scale=1.0))
    w = build_workload(ns)
    w = w._with(prompt_len=np.minimum(w.prompt_len, a.max_prompt), output_len=np.minimum(w.output_len, a.max_output))
    ttft, tpot = default_slos(profile, w)
    ttft = a.ttft_slo_ms / 1e3 if a.ttft_slo_ms else ttft
    tpot = a.tpot_slo_ms / 1e3 if a.tpot_slo_ms else tpot
    return w._with(ttft=np.full(len(w), ttft), tpot=np.full(len(w), tpot)), ttft, tpot


def at_rate(w, rate: float):
    """`w` with its arrivals rescaled to a mean of `rate` requests/s."""
    cur = (len(w) - 1) / w.duration if w.duration > 0 else rate
    return w.rate_scaled(rate / cur)


def errors(real: dict, sim: dict) -> dict:
    out = {}
    for m in METRICS:
        for q in PCTS:
            r, s = (real.get(m) or {}).get(q), (sim.get(m) or {}).get(q)
            ok = all(isinstance(x, float) and math.isfinite(x) for x in (r, s)) and r > 0
            out[f"{m}_{q}"] = (s - r) / r if ok else None
    out["attainment_pts"] = 100.0 * (sim["attainment"] - real["attainment"])
    return out


async def run_loads(
    url: str,
    profile: dict,
    w,
    loads: list[float],
    *,
    instances: int = 1,
    policy: str = "least_outstanding",
    rate: float | None = None,
    model: str | None = None,
    timeout: float = 600.0,
    seed: int = 0,
    progress: bool = True,
    engine_pid: int | None = None,
) -> dict:
    """Each load in turn on the real engine(s) at url, then in the simulator. With engine_pid
    (the server's process; its children are included) each row also says how much of its
    runnable time the engine spent waiting for a CPU (cpu_wait), which no step model predicts."""
    from slocore.serve import loadgen
    from slocore.twin import cpu_wait
    from slocore.twin.client import EngineClient

    async with EngineClient(url, model=model, timeout=timeout, seed=seed) as c:
        await c.identify()  # an endpoint that is down or not OpenAI-compatible fails here, not on every request
    sat = rate or saturation_rate(profile, w, instances)
    rows = []
    for load in loads:
        wl = at_rate(w, load * sat)
        m0, c0 = await _engine_counters(url), cpu_wait.snapshot(engine_pid)
        real = await loadgen.run(
            url, wl, model=model, timeout=timeout, seed=seed, progress=progress, extra_body=count_by_token_ids(profile)
        )
        m1, c1 = await _engine_counters(url), cpu_wait.snapshot(engine_pid)
        sim = simulate(wl, profile, instances=instances, policy=policy, seed=seed)
        rows.append(
            {
                "load": load,
                "rate": load * sat,
                "real": _slim(real["summary"]),
                "sim": _slim(sim),
                "errors": errors(real["summary"], sim),
                "engine_view": engine_view(
                    m0, m1, real["summary"], sim, frontend_s(profile), wall_s=real.get("wall_s")
                ),
                "failed": len(real["errors"]),
                "first_errors": real["errors"][:3],
                "cpu_wait": cpu_wait.waited_share(c0, c1),
            }
        )
    return {"saturation_rate": sat, "instances": instances, "policy": policy, "rows": rows}


# vLLM's per-request histograms (engine-core timestamps): sum and count of each.
_ENGINE_HIST = {
    "queue": "vllm:request_queue_time_seconds",
    "prefill": "vllm:request_prefill_time_seconds",
    "tpot": "vllm:request_time_per_output_token_seconds",
    "api_ttft": "vllm:time_to_first_token_seconds",  # arrival to first token, in the API server
    "inference": "vllm:request_inference_time_seconds",  # scheduled to finished (running)
    "steps": "vllm:iteration_tokens_total",  # sum: tokens scheduled, count: engine steps
}


async def _engine_counters(url: str) -> dict | None:
    """Sums and counts of vLLM's per-request histograms at `url`; None when it has none
    (another engine, or `slocore serve` in front of several)."""
    from slocore.twin.client import EngineClient, EngineError, total

    try:
        async with EngineClient(url, timeout=10.0) as c:
            m = await c.metrics()
    except EngineError:
        return None
    if not m or total(m, _ENGINE_HIST["prefill"] + "_count") is None:
        return None
    return {k: (total(m, n + "_sum") or 0.0, total(m, n + "_count") or 0.0) for k, n in _ENGINE_HIST.items()}


def engine_view(
    m0: dict | None,
    m1: dict | None,
    real: dict,
    sim: dict,
    frontend: float,
    *,
    wall_s: float | None = None,
) -> dict | None:
    """The comparison split at the engine's boundary (vLLM only): mean TTFT inside the engine
    (queue + prefill, engine-core timestamps) and mean TPOT as the engine produced tokens, real
    against simulated (simulated TTFT without the front-end term); and the delivery lag, the
    client's mean TTFT minus the engine's and the front end. A large lag with small engine
    errors says the miss is in the API server's delivery, not in the step model."""
    if not m0 or not m1:
        return None
    d = {k: (m1[k][0] - m0[k][0], m1[k][1] - m0[k][1]) for k in m0}
    if d["prefill"][1] <= 0:
        return None
    eng_ttft = (d["queue"][0] + d["prefill"][0]) / d["prefill"][1]
    eng_tpot = d["tpot"][0] / d["tpot"][1] if d["tpot"][1] > 0 else None
    sim_ttft = (sim.get("ttft") or {}).get("mean")
    if isinstance(sim_ttft, float):  # the simulated engine's own: without the front end and the modelled lag
        sim_ttft -= frontend + sim.get("delivery_lag_first_mean", 0.0)
    sim_tpot = (sim.get("tpot") or {}).get("mean")
    real_ttft = (real.get("ttft") or {}).get("mean")

    def rel(s, r):
        return (s - r) / r if isinstance(s, float) and r else None

    return {
        "real_ttft_mean": eng_ttft,
        "sim_ttft_mean": sim_ttft,
        "ttft_mean_err": rel(sim_ttft, eng_ttft),
        "real_tpot_mean": eng_tpot,
        "sim_tpot_mean": sim_tpot,
        "tpot_mean_err": rel(sim_tpot, eng_tpot),
        "delivery_lag_s": real_ttft - eng_ttft - frontend if isinstance(real_ttft, float) else None,
        "sim_delivery_lag_s": sim.get("delivery_lag_first_mean"),
        # where the lag is: the API server's own TTFT (its arrival stamp to its handling of the
        # first token) against the engine core's queue + prefill
        "api_ttft_mean": d["api_ttft"][0] / d["api_ttft"][1] if d["api_ttft"][1] > 0 else None,
        "requests": d["prefill"][1],
        **_batches(d, sim, frontend, wall_s),
    }


def _batches(d: dict, sim: dict, frontend: float, wall_s: float | None) -> dict:
    """How the engine batched, real against simulated: engine steps (vLLM's
    iteration-token histogram count; the simulator's iterations) and the time-averaged
    requests running and waiting (Little's law over the load's wall time: vLLM's summed
    inference and queue times; the simulator's summed E2E without the front end). A real
    engine that ran fewer, larger steps and held more requests than the simulator was slower
    per step than the model, whatever the load."""
    if "steps" not in d or not wall_s or wall_s <= 0:
        return {}
    out = {
        "real_steps": d["steps"][1],
        "real_running_mean": d["inference"][0] / wall_s,
        "real_waiting_mean": d["queue"][0] / wall_s,
    }
    it, e2e, dur = sim.get("iterations"), sim.get("e2e") or {}, sim.get("duration_s")
    if it and isinstance(e2e.get("mean"), float) and dur:
        in_engine = e2e["mean"] - frontend - sim.get("delivery_lag_last_mean", 0.0)
        out.update(sim_steps=it, sim_in_system_mean=in_engine * e2e.get("count", 0) / dur)
    return out


def count_by_token_ids(profile: dict) -> dict | None:
    """vLLM streams a token whose text is still empty (an incomplete UTF-8 sequence: the tiny
    byte-level model does this often) as a chunk with text ""; a client counting tokens by text
    sees it only at the end, which moved the real TTFT by hundreds of ms. Asking vLLM for the
    token ids counts every token when it arrives, as ``slocore profile`` does."""
    return {"return_token_ids": True} if (profile.get("engine") or {}).get("kind") == "vllm" else None


def _slim(s: dict) -> dict:
    keep = {m: {q: s[m].get(q) for q in ("mean", *PCTS)} for m in METRICS if isinstance(s.get(m), dict)}
    return {
        **keep,
        "attainment": s["attainment"],
        "ttft_attainment": s.get("ttft_attainment"),
        "tpot_attainment": s.get("tpot_attainment"),
        "throughput_tok_s": s.get("throughput_tok_s"),
        "finished": s.get("finished"),
        "requests": s.get("requests"),
    }


def table(out: dict, title: str) -> str:
    def pct(v):
        return "   -  " if v is None else f"{v:+6.1%}"

    lines = [
        title,
        f"saturation (load 1.0) = {out['saturation_rate']:.2f} req/s on {out['instances']} engine(s)",
        f"{'load':>5s} {'req/s':>6s} | "
        + " ".join(f"{m + ' ' + q:>9s}" for m in METRICS for q in PCTS)
        + " | attain real  sim   diff",
    ]
    for r in out["rows"]:
        e = r["errors"]
        lines.append(
            f"{r['load']:5.2f} {r['rate']:6.2f} | "
            + " ".join(f"{pct(e[f'{m}_{q}']):>9s}" for m in METRICS for q in PCTS)
            + f" | {r['real']['attainment']:6.3f} {r['sim']['attainment']:6.3f} {e['attainment_pts']:+5.1f}"
            + (f"  ({r['failed']} failed)" if r["failed"] else "")
        )
    lines.append("errors: (sim - real) / real; attainment diff in points (sim - real)")
    for r in out["rows"]:
        ev = r.get("engine_view")
        if ev:
            lines.append(
                f"  load {r['load']:.2f} inside the engine (vLLM histograms, means): TTFT real "
                f"{ev['real_ttft_mean'] * 1e3:.1f} ms sim {pct(ev['ttft_mean_err'])}, TPOT real "
                f"{(ev['real_tpot_mean'] or 0) * 1e3:.2f} ms sim {pct(ev['tpot_mean_err'])}; "
                f"delivery lag (client TTFT - engine - front end) {(ev['delivery_lag_s'] or 0) * 1e3:.1f} ms"
                + (
                    f", modelled {ev['sim_delivery_lag_s'] * 1e3:.1f} ms"
                    if ev.get("sim_delivery_lag_s") is not None
                    else ""
                )
                + (f" (API server's TTFT {ev['api_ttft_mean'] * 1e3:.1f} ms)" if ev.get("api_ttft_mean") else "")
            )
            if ev.get("real_steps") is not None and ev.get("sim_steps") is not None:
                lines.append(
                    f"  load {r['load']:.2f} batches: engine steps real {ev['real_steps']:.0f} sim {ev['sim_steps']}; "
                    f"requests in the engine (mean) real {ev['real_running_mean']:.1f} running + "
                    f"{ev['real_waiting_mean']:.1f} waiting, sim {ev['sim_in_system_mean']:.1f}"
                )
        if r.get("cpu_wait") is not None:
            lines.append(
                f"  load {r['load']:.2f}: the engine's busiest process waited for a CPU {r['cpu_wait']:.0%} of its "
                "runnable time (the machine's share, not the engine's; the simulator has none)"
            )
    lines.append(
        f"{'':13s}| real p50 ms: "
        + " ".join(f"{m} " + "/".join(f"{(r['real'][m]['p50'] or 0) * 1e3:.1f}" for r in out["rows"]) for m in METRICS)
    )
    return "\n".join(lines)


def main(a) -> int:
    from slocore.profiles import load_profile

    profile = load_profile(a.profile)
    loads = a.loads
    if a.instances < 1:
        raise ValueError(f"--instances: must be >= 1, got {a.instances}")
    w, ttft, tpot = prepare(a, profile)
    out = asyncio.run(
        run_loads(
            a.url,
            profile,
            w,
            loads,
            instances=a.instances,
            policy=a.policy,
            rate=a.rate,
            model=a.model,
            timeout=a.timeout,
            seed=a.seed,
            progress=not a.quiet,
            engine_pid=a.engine_pid,
        )
    )
    out.update(profile=profile["name"], url=a.url, requests=len(w), ttft_slo_s=ttft, tpot_slo_s=tpot)
    title = (
        f"bench twin: {a.url} vs simulator with profile {profile['name']}; "
        f"{'trace ' + a.trace if a.trace else 'workload ' + a.workload} {' '.join(a.param)}, {len(w)} requests "
        f"per load, SLO TTFT {ttft * 1e3:.1f} ms / TPOT {tpot * 1e3:.2f} ms"
    )
    if a.json:
        print(json.dumps(out, indent=1, default=lambda x: None))
    else:
        print(table(out, title))
    return 0 if not any(r["failed"] for r in out["rows"]) else 1
