"""`slocore bench serve`: replay a workload (by name, as the simulator's) or a trace against
any OpenAI-compatible endpoint and report the simulator's metrics.

Each request is sent at its arrival time (open loop; ``--max-concurrency`` caps requests in
flight) as a streaming ``/v1/completions`` call with a token-id prompt of the workload's
prompt length, ``max_tokens`` = its output length and ``ignore_eos``, its SLO in the
``x-slo-*`` headers and its task as ``x-slo-class``. Every streamed token's arrival time
goes to a ``slocore.Recorder``; ``slocore.summarize`` turns it into the same table the
simulator prints (attainment, TTFT/TPOT/TBT/E2E percentiles, throughput, TDG).

A request answered with a 4xx other than 429 was refused as invalid: it is listed under
``invalid`` and left out of the summary (the router counts the engine's own 4xx apart as
``engine_rejected`` the same way); every other failure is a rejected request, an SLO miss.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
import time

from slocore import cli_args


def add_arguments(p) -> None:
    p.add_argument("--url", type=cli_args.http_url, default="http://127.0.0.1:8000", help="base URL of the endpoint")
    p.add_argument("--workload", default="sharegpt_like", help="workload name (slocore.sim.workloads)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="workload parameter (repeatable), e.g. --param rate=4 --param n=200",
    )
    p.add_argument("--trace", help="replay this trace CSV instead of a workload")
    p.add_argument("-n", "--num-requests", dest="n", type=cli_args.positive_int, help="first N requests only")
    p.add_argument("--rate-scale", dest="rate_scale", type=cli_args.positive_float, default=1.0, help="x request rate")
    p.add_argument(
        "--max-prompt", dest="max_prompt", type=cli_args.positive_int, default=None, help="clip prompt lengths"
    )
    p.add_argument(
        "--max-output", dest="max_output", type=cli_args.positive_int, default=None, help="clip output lengths"
    )
    p.add_argument(
        "--max-concurrency", dest="max_concurrency", type=cli_args.non_negative_int, default=0, help="0 = unlimited"
    )
    p.add_argument("--model", help="model name to send (default: the endpoint's first /v1/models)")
    p.add_argument("--vocab", type=cli_args.positive_int, default=1000, help="token ids are drawn below this")
    p.add_argument("--timeout", type=cli_args.positive_float, default=600.0, help="per-request timeout (s)")
    p.add_argument("--seed", type=cli_args.non_negative_int, default=0)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _value(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def build_workload(a):
    from slocore.sim import workloads

    if a.trace:
        from slocore.sim.traces import load_trace

        w = load_trace(a.trace)
    else:
        params = {}
        for kv in a.param:
            if "=" not in kv:
                raise ValueError(f"--param: expected K=V, got {kv!r}")
            k, v = kv.split("=", 1)
            params[k] = _value(v)
        w = workloads.make_workload(a.workload, **params)
    if a.n:
        w = w.head(a.n)
    if a.rate_scale != 1.0:
        w = w.rate_scaled(a.rate_scale)
    return w


async def run(
    url: str,
    workload,
    *,
    model: str | None = None,
    max_concurrency: int = 0,
    vocab: int = 1000,
    timeout: float = 600.0,
    seed: int = 0,
    progress: bool = True,
    max_prompt=None,
    max_output=None,
    chat: bool = False,
    prompts: list[list[int]] | None = None,
    extra_body: dict | None = None,
    slo_xargs: bool = False,
    priority_body: bool = False,
    refused_as_missed: bool = False,
) -> dict:
    """Replay `workload` against `url`; returns {"summary": slocore.summarize(...), "errors": [...], ...}.
    `prompts`: the token ids of each request's prompt (default: random ids of its length).
    `extra_body`: more fields for every request body (e.g. vLLM's ``return_token_ids``, so a
    token whose text is still empty, an incomplete UTF-8 sequence, is counted when it arrives).
    `slo_xargs`: also send each request's SLO and priority in the body's ``vllm_xargs`` (what
    the slocore vLLM plugin reads when no slocore router sits in front, e.g. behind vllm-router).
    `priority_body`: also send each request's priority as the body's ``priority`` (an integer;
    what vLLM's own ``--scheduling-policy priority`` orders by, lower first).
    `refused_as_missed`: a 4xx answer counts as a missed request (in the summary, and in
    ``errors``) instead of an invalid one kept apart: for traces every engine accepts, so a
    refusal is the stack's failure."""
    import aiohttp

    import slocore as _s
    from slocore.serve.config import STALE_RETRIES  # pydantic (the serve extra): not at the CLI's start
    from slocore.serve.upstream import connector, stale_connection
    from slocore.sim.runner import requests_of

    reqs = requests_of(workload)
    rng = random.Random(seed)
    rec = _s.Recorder()
    errors: list[str] = []
    invalids: list[str] = []  # answered 4xx (not 429): outside the summary
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(reqs), unit="req", desc="bench serve", file=sys.stderr)
        except ImportError:
            bar = None
    sem = asyncio.Semaphore(max_concurrency) if max_concurrency > 0 else None
    # idle connections closed before the server's own keep-alive ends (uvicorn, vLLM's API
    # server: 5 s; serve.upstream.connector): reusing one the server is closing fails with
    # "Server disconnected"
    limit = aiohttp.ClientTimeout(total=timeout)
    # a retry after a stale pooled connection goes out on a new one: the pool may hold several
    # the server closed at once (three in a row failed on a stalled vLLM-CPU API server)
    fresh = aiohttp.ClientSession(connector=connector(force_close=True), timeout=limit)
    async with fresh, aiohttp.ClientSession(connector=connector(), timeout=limit) as s:
        if model is None:
            try:
                async with s.get(url.rstrip("/") + "/v1/models") as r:
                    model = (await r.json())["data"][0]["id"]
            except Exception:  # noqa: BLE001 - any endpoint without /v1/models
                model = "default"
        t0 = time.monotonic()
        t_first = float(reqs[0].arrival) if reqs else 0.0

        async def one(i, r):
            plen = r.prompt_len if not max_prompt else min(r.prompt_len, max_prompt)
            olen = (r.output_len or 16) if not max_output else min(r.output_len or 16, max_output)
            req = _s.Request(
                i,
                float(r.arrival) - t_first,
                int(plen),
                output_len=int(olen),
                ttft=r.slo.ttft,
                tpot=r.slo.tpot,
                priority=r.priority,
                priority_weight=r.priority_weight,
                task=r.task,
                **({"deadline": r.slo.deadline} if r.slo.deadline is not None else {}),
            )
            delay = req.arrival - (time.monotonic() - t0)
            if delay > 0:
                await asyncio.sleep(delay)
            if sem:
                await sem.acquire()
            hdr = {
                # 12 digits: the router's SLO is the one summarize() judges by (%g kept 6)
                "x-slo-ttft-ms": f"{r.slo.ttft * 1e3:.12g}",
                "x-slo-tpot-ms": f"{r.slo.tpot * 1e3:.12g}",
                "x-priority": str(r.priority),
            }
            if r.slo.deadline is not None:  # real-time requests: E2E bound (metrics.h)
                hdr["x-slo-deadline-ms"] = f"{r.slo.deadline * 1e3:.12g}"
            if r.task:
                hdr["x-slo-class"] = r.task
            xargs = {}
            if slo_xargs:  # the plugin's field names (integrations/vllm/scheduler.py)
                xargs = {"slo_ttft_ms": r.slo.ttft * 1e3, "slo_tpot_ms": r.slo.tpot * 1e3, "priority": r.priority}
                if r.slo.deadline is not None:
                    xargs["slo_deadline_ms"] = r.slo.deadline * 1e3
            prompt = prompts[i][: int(plen)] if prompts else [rng.randrange(1, vocab) for _ in range(int(plen))]
            body = {
                "model": model,
                "max_tokens": int(olen),
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
                "temperature": 0.0,
                **(extra_body or {}),
            }
            if priority_body:
                body["priority"] = int(r.priority)
            if xargs:
                body["vllm_xargs"] = {**body.get("vllm_xargs", {}), **xargs}
            if chat:
                body["messages"] = [{"role": "user", "content": " ".join(str(x) for x in prompt)}]
                path = "/v1/chat/completions"
            else:
                body["prompt"] = prompt
                path = "/v1/completions"
            ntok, usage, err, invalid, added = 0, None, None, False, False
            answered = False
            try:
                for attempt in range(STALE_RETRIES + 1):
                    try:
                        post = (s if attempt == 0 else fresh).post
                        async with post(url.rstrip("/") + path, json=body, headers=hdr) as resp:
                            answered = True
                            # a 4xx other than 429 refuses the request as invalid: counted apart, outside
                            # attainment (the router's engine_rejected); every other request is recorded
                            invalid = 400 <= resp.status < 500 and resp.status != 429 and not refused_as_missed
                            if not invalid:
                                rec.add(req)
                                added = True
                            if resp.status != 200:
                                err = f"HTTP {resp.status}: {(await resp.text())[:200]}"
                            else:
                                async for line in resp.content:
                                    if not line.startswith(b"data:"):
                                        continue
                                    data = line[5:].strip()
                                    if data == b"[DONE]":
                                        break
                                    obj = json.loads(data)
                                    if "error" in obj and not obj.get("choices"):
                                        err = f"stream error: {obj['error'].get('message', obj['error'])}"
                                        break
                                    now = time.monotonic() - t0
                                    for ch in obj.get("choices") or []:
                                        text = (ch.get("delta") or {}).get("content") if chat else ch.get("text")
                                        k = len(ch.get("token_ids") or ()) or (1 if text else 0)
                                        for _ in range(k):
                                            rec.token(i, now)
                                        ntok += k
                                    if obj.get("usage"):
                                        usage = obj["usage"]
                    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as e:
                        # a pooled connection the server closed as we sent (its keep-alive ran out
                        # while this loop was late to drop it): nothing was computed, send it again
                        if stale_connection(e) and not answered and attempt < STALE_RETRIES:
                            continue
                        err = f"{type(e).__name__}: {e}"
                    break
            finally:
                if sem:
                    sem.release()
            now = time.monotonic() - t0
            if err is None and ntok == 0 and not (usage or {}).get("completion_tokens"):
                err = "no tokens"
            if invalid:
                invalids.append(f"request {i}: {err}")
            elif err is not None:
                if not added:  # no answer at all (connection refused, timeout)
                    rec.add(req)
                rec.reject(i, now, err)
                errors.append(f"request {i}: {err}")
            else:
                # a chunk may carry several tokens: the engine's usage count is the truth
                extra = (usage or {}).get("completion_tokens", ntok) - ntok
                for _ in range(max(0, extra)):
                    rec.token(i, now)
                rec.finish(i, now)
            if bar:
                bar.update(1)

        await asyncio.gather(*(one(i, r) for i, r in enumerate(reqs)))
        wall = time.monotonic() - t0
    if bar:
        bar.close()
    summary = _s.summarize(rec)
    return {
        "summary": summary,
        "errors": errors,
        "invalid": invalids,
        "wall_s": wall,
        "requests": len(reqs),
        "model": model,
        "recorder": rec,
    }


def table(out: dict, title: str) -> str:
    s = out["summary"]

    def ms(d, k):
        v = d.get(k)
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v * 1e3:.1f}"

    lines = [
        title,
        f"requests {s['requests']}, finished {s['finished']}, failed {s['rejected']}, wall {out['wall_s']:.1f} s",
        f"SLO attainment {s['attainment']:.3f} (TTFT {s['ttft_attainment']:.3f}, TPOT {s['tpot_attainment']:.3f})"
        f"; output throughput {s['throughput_tok_s']:.1f} tok/s; TDG ratio {s['tdg_ratio']:.3f}",
        f"{'metric':8s} {'mean ms':>9s} {'p50 ms':>9s} {'p90 ms':>9s} {'p99 ms':>9s} {'p99.9 ms':>9s}",
    ]
    for k in ("ttft", "tpot", "tbt", "e2e"):
        d = s.get(k) or {}
        lines.append(
            f"{k:8s} {ms(d, 'mean'):>9s} {ms(d, 'p50'):>9s} {ms(d, 'p90'):>9s} {ms(d, 'p99'):>9s} {ms(d, 'p99.9'):>9s}"
        )
    if s.get("attainment_by_task"):
        lines.append(
            "attainment by class: " + ", ".join(f"{k or '-'}={v:.3f}" for k, v in s["attainment_by_task"].items())
        )
    if out.get("invalid"):
        lines.append(f"invalid (HTTP 4xx other than 429; outside the summary): {len(out['invalid'])}")
    for e in (out["errors"] + out.get("invalid", []))[:5]:
        lines.append(f"error: {e}")
    return "\n".join(lines)


def main(a) -> int:
    w = build_workload(a)
    out = asyncio.run(
        run(
            a.url,
            w,
            model=a.model,
            max_concurrency=a.max_concurrency,
            vocab=a.vocab,
            timeout=a.timeout,
            seed=a.seed,
            progress=not a.quiet,
            max_prompt=a.max_prompt,
            max_output=a.max_output,
        )
    )
    title = (
        f"bench serve: {a.url}, {'trace ' + a.trace if a.trace else 'workload ' + a.workload} "
        f"{' '.join(a.param)}, {len(w)} requests, rate x{a.rate_scale:g}, seed {a.seed}"
    )
    if a.json:
        from slocore.serve.openai import jsonable as _jsonable

        print(
            json.dumps(
                {
                    "title": title,
                    "summary": _jsonable(out["summary"]),
                    "errors": out["errors"],
                    "invalid": out["invalid"],
                    "wall_s": out["wall_s"],
                },
                indent=1,
            )
        )
    else:
        print(table(out, title))
    return 0 if not out["errors"] and not out["invalid"] else 1
