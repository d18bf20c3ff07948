"""The designed request set of ``slocore profile``: which batches to put on the engine and
how each turns into a measured step time (a ``fitmodel.Point``).

  prefill  one request alone, prompt L, max_tokens 1: its time to first token is one
           prefill step of L tokens plus the front end (feature ``first``).
  decode   B requests at once, prompt P, D output tokens each: once every one has its
           first token and before any finishes, all B decode in every step; the mean time
           between a request's tokens in that window is one decode step of B requests.
  mixed    B requests decoding steadily, then one prompt of L tokens: the step that gives
           the newcomer its first token also gives each decoder a token, so the decoders'
           gap ending at that moment is one mixed step (B decodes + a prefill of L).
  capacity (needs /metrics) the largest batch the engine runs at once: many requests at once
           while polling vllm:num_requests_running / _waiting.

Prompts are random token ids, so a prefix cache never hits. Sizes scale with the engine's
max_model_len, max_num_seqs and token budget; every experiment is repeated.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass

from slocore.twin.client import EngineClient, EngineError, total
from slocore.twin.fitmodel import Point


@dataclass
class Experiment:
    kind: str
    batch: int = 1
    prompt_len: int = 16
    output_len: int = 1
    new_prompt_len: int = 0  # mixed: the newcomer's prompt

    def label(self) -> str:
        if self.kind == "prefill":
            return f"prefill L={self.prompt_len}"
        if self.kind == "decode":
            return f"decode B={self.batch} ctx={self.prompt_len}"
        return f"mixed B={self.batch} + L={self.new_prompt_len}"


def plan(
    max_model_len: int, max_num_seqs: int, token_budget: int, repeats: int = 3, decode_tokens: int = 64
) -> list[Experiment]:
    """The default design for an engine with these limits (one list, every engine)."""
    for name, v in (
        ("max_model_len", max_model_len),
        ("max_num_seqs", max_num_seqs),
        ("token_budget", token_budget),
        ("repeats", repeats),
        ("decode_tokens", decode_tokens),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
    longest = min(max_model_len - decode_tokens - 8, token_budget - max_num_seqs)
    if longest < 16:
        raise ValueError(
            f"max_model_len {max_model_len} / token budget {token_budget}: too small to profile "
            f"(need room for a 16-token prompt and {decode_tokens} output tokens)"
        )
    lens = sorted({L for L in (16, 64, 128, 256, 512, 1024, 2048, 4096) if L <= longest} | {longest})
    batches = sorted({b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) if b <= max_num_seqs} | {max_num_seqs})
    contexts = sorted({16, max(16, min(longest, max_model_len // 2))})
    mixed_b = sorted({max(1, max_num_seqs // 8), max(1, max_num_seqs // 2)})
    mixed_l = sorted({min(128, longest), longest})
    # All B prompts must fit one step's token budget: else their prefills spread over several
    # steps and the "decode" window holds mixed steps (B=32 x 512 tokens took 8 steps of 2048
    # in vLLM, +30 % on that point), so a long context is shortened for large batches.
    decode_bc = sorted(
        {(b, min(c, max(16, token_budget // b))) for c in contexts for b in batches},
        key=lambda bc: (bc[1] != 16, bc),
    )
    one = (
        [Experiment("prefill", prompt_len=L) for L in lens]
        + [Experiment("decode", batch=b, prompt_len=c, output_len=decode_tokens) for b, c in decode_bc]
        + [
            Experiment("mixed", batch=b, prompt_len=16, output_len=4 * decode_tokens, new_prompt_len=L)
            for b in mixed_b
            for L in mixed_l
        ]
    )
    return [e for _ in range(repeats) for e in one]


# vLLM's per-request histograms, recorded when a request finishes, from engine-core
# timestamps (vllm/v1/metrics/stats.py): immune to a client or API server that reads late.
_HIST = {
    "prefill": "vllm:request_prefill_time_seconds",
    "decode": "vllm:request_decode_time_seconds",
    "queue": "vllm:request_queue_time_seconds",
}


async def _counters(c: EngineClient) -> dict | None:
    m = await c.metrics()
    if m is None:
        return None
    steps = total(m, "vllm:iteration_tokens_total_count")
    out = {"steps": steps, "tokens": total(m, "vllm:iteration_tokens_total_sum")}
    for k, name in _HIST.items():
        out[k + "_sum"], out[k + "_count"] = total(m, name + "_sum"), total(m, name + "_count")
    return out


def _delta(before, after) -> dict:
    if not before or not after:
        return {}
    return {k: after[k] - before[k] for k in before if before[k] is not None and after.get(k) is not None}


async def run(c: EngineClient, e: Experiment, use_metrics: bool = True) -> Point | None:
    """Run one experiment; None when its window held no usable step (reported, not fitted).

    With vLLM's histograms the step time is the engine's own (prefill_time of a lone request
    or of the newcomer, decode_time / (D-1)); the client's view is kept in ``detail`` and
    gives the front-end term. Without them, client arrival times are all there is."""
    before = await _counters(c) if use_metrics else None
    if e.kind == "prefill":
        s = await c.stream(e.prompt_len, 1)
        after = await _counters(c) if use_metrics else None
        d = _delta(before, after)
        p = Point(
            "prefill", s.ttft, [(e.prompt_len, 0)], [], first=1, detail={"prompt_len": e.prompt_len, "client_s": s.ttft}
        )
        if d.get("prefill_count") == 1:
            p.seconds, p.first = d["prefill_sum"], 0
            p.detail["timing"], p.detail["frontend_s"] = "engine", s.ttft - d["prefill_sum"] - d.get("queue_sum", 0)
    elif e.kind == "decode":
        streams = await asyncio.gather(*(c.stream(e.prompt_len, e.output_len) for _ in range(e.batch)))
        after = await _counters(c) if use_metrics else None
        d = _delta(before, after)
        p = _decode_point(e, streams)
        if d.get("decode_count") == e.batch and e.output_len > 1:
            client = p.seconds if p is not None else None
            p = Point(
                "decode",
                d["decode_sum"] / (e.batch * (e.output_len - 1)),
                [],
                [e.prompt_len + e.output_len / 2] * e.batch,
                detail={
                    "batch": e.batch,
                    "context": e.prompt_len + e.output_len / 2,
                    "client_s": client,
                    "timing": "engine",
                },
            )
    elif e.kind == "mixed":
        p, d = await _mixed(c, e, use_metrics)
    else:
        raise ValueError(f"experiment kind: unknown {e.kind!r}")
    if p is not None:
        p.detail = {
            **(p.detail or {}),
            "experiment": e.label(),
            **{k: v for k, v in d.items() if k in ("steps", "tokens")},
        }
        p.detail.setdefault("timing", "client")
    return p


def _decode_point(e: Experiment, streams) -> Point | None:
    start = max(s.tokens[0] for s in streams)
    end = min(s.tokens[-1] for s in streams)
    gaps, ctx = [], []
    for s in streams:
        idx = [i for i, t in enumerate(s.tokens) if start < t <= end]
        if len(idx) >= 3:
            gaps.append((s.tokens[idx[-1]] - s.tokens[idx[0]]) / (idx[-1] - idx[0]))
            ctx.append(e.prompt_len + (idx[0] + idx[-1]) / 2)
    if len(gaps) < max(1, e.batch // 2):
        return None
    lkv = statistics.fmean(ctx)
    return Point(
        "decode",
        statistics.median(gaps),
        [],
        [lkv] * e.batch,
        detail={"batch": e.batch, "context": round(lkv, 1), "window_tokens": len(gaps)},
    )


async def _mixed(c: EngineClient, e: Experiment, use_metrics: bool):
    live: list = []

    def seen(st):
        if not any(x is st for x in live):
            live.append(st)

    tasks = [asyncio.ensure_future(c.stream(e.prompt_len, e.output_len, on_token=seen)) for _ in range(e.batch)]
    try:
        while len(live) < e.batch or min(len(s.tokens) for s in live) < 8:
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.001)
        before = await _counters(c) if use_metrics else None
        new = await c.stream(e.new_prompt_len, 1)
        after = await _counters(c) if use_metrics else None
        decoders = await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        raise
    d = _delta(before, after)
    if d.get("prefill_count") == 1 and d.get("decode_sum", 1) < 1e-9:  # only the newcomer (1 token) finished
        detail = {"batch": e.batch, "new_prompt_len": e.new_prompt_len, "timing": "engine", "client_s": new.ttft}
        gaps = [statistics.median(b - a for a, b in zip(s.tokens, s.tokens[1:])) for s in decoders if len(s.tokens) > 2]
        step = statistics.median(gaps) if gaps else 0.0
        if step > 0:
            # The newcomer's front end while the API server streams the decoders' tokens
            # (frontend_s of a lone prompt is the same with nothing streaming): the delivery
            # term's points (profiler._delivery_lag). vLLM stamps a request queued when its
            # engine loop takes it in, between steps, so its queue + prefill leave out the
            # step in flight when the newcomer came, half a step on average: the simulator
            # has that wait in its engine, so it is taken out here too.
            detail["loaded_frontend_s"] = new.ttft - d["prefill_sum"] - d.get("queue_sum", 0) - step / 2
            detail["stream_tok_s"] = e.batch / step
        return Point(
            "mixed", d["prefill_sum"], [(e.new_prompt_len, 0)], [e.prompt_len + 8.0] * e.batch, detail=detail
        ), d
    t1 = new.tokens[0]
    gaps, ctx = [], []
    for s in decoders:
        if not (s.tokens[2] < t1 < s.tokens[-2]):
            continue
        g = statistics.median(b - a for a, b in zip(s.tokens, s.tokens[1:]))  # a decode-only step
        # The mixed step ends with the newcomer's first token; the client may read either
        # token a little early or late, so take the longest gap ending near that moment.
        near = [k for k in range(1, len(s.tokens)) if t1 - g <= s.tokens[k] <= t1 + 3 * g]
        if near:
            k = max(near, key=lambda i: s.tokens[i] - s.tokens[i - 1])
            gaps.append(s.tokens[k] - s.tokens[k - 1])
            ctx.append(e.prompt_len + k)
    if len(gaps) < max(1, e.batch // 2):
        return None, d
    lkv = statistics.fmean(ctx)
    return Point(
        "mixed",
        statistics.median(gaps),
        [(e.new_prompt_len, 0)],
        [lkv] * e.batch,
        detail={"batch": e.batch, "new_prompt_len": e.new_prompt_len, "context": round(lkv, 1)},
    ), d


async def max_running(c: EngineClient, requests: int, prompt_len: int = 16, output_len: int = 512) -> int | None:
    """The largest number of requests the engine ran at once while `requests` were in flight
    (vllm:num_requests_running); None without /metrics. Equals the engine's max_num_seqs when
    some had to wait (vllm:num_requests_waiting > 0) and the polls saw the peak; never more.
    The requests decode long (output_len) so that on a slow machine the first ones do not end
    before the API server has handed the last ones to the engine (with 128 tokens a loaded
    machine saw 27 of 32). They run to their end: in the one CI run that cancelled them once
    the peak was seen, a later experiment's request met a disconnected server (cause not
    reproduced)."""
    if await c.metrics() is None:
        return None
    tasks = [asyncio.ensure_future(c.stream(prompt_len, output_len)) for _ in range(requests)]
    peak = 0
    try:
        while not all(t.done() for t in tasks):
            m = await c.metrics()
            if m is None:
                break
            peak = max(peak, int(total(m, "vllm:num_requests_running") or 0))
            # Not faster: each poll renders every metric in vLLM's API server, the loop that
            # also admits the probe's requests (polled every 5 ms on a loaded machine, the
            # engine was seen running 25 of its 32 at most).
            await asyncio.sleep(0.05)
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        raise
    if peak == 0:
        raise EngineError(
            f"{c.url}/metrics: vllm:num_requests_running never rose above 0 with {requests} requests in flight"
        )
    # Never more than was seen running: on a busy machine a /metrics poll can take over a
    # second and miss every waiting request, and assuming all `requests` ran then doubled
    # max_num_seqs (64 for an engine started with 32) and the saturation estimate with it.
    return peak
