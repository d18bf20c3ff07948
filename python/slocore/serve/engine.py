"""Emulated engine: vLLM's OpenAI API with token timing from a hardware profile.

The engine is the simulator's own (``slocore.EngineModel``, csrc/slocore/sim/engine.cc):
each iteration a slocore batch scheduler (by name, default ``sarathi_fcfs``, or an object)
plans the batch, the plan is sanitised, the iteration lasts the profile's truth time for that
batch, the view's latency model is corrected online and the scheduler gets
``on_batch_done``, exactly as in ``slocore simulate``; here each iteration is paced by real
time (its duration times ``time_scale``; the engine's clock is real seconds / ``time_scale``).
``stats.history`` keeps the recent plans. ``/metrics`` carries vLLM's names
(``vllm:num_requests_running``, ``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc``)
so the router polls it exactly like a real vLLM server.

P/D: a request with ``kv_transfer_params.do_remote_decode`` stops after its prefill and
answers with ``kv_transfer_params`` for the decode side; one with
``kv_transfer_params.do_remote_prefill`` skips its prefill after the profile's KV-transfer
time (the fields vLLM's disaggregated proxies pass). Such a handoff enters the engine as the
simulator's decode engine receives one: prompt computed, token 1 generated (sent to the
client with its first step's token, as vLLM's decode server repeats it), its first token dated now
and its arrival the router's ``slo_handoff_ttft_ms`` earlier (``integrations/xargs.py``).
``role="decode"`` gives the scheduler a decode instance's view (slo_triage's decode rules). A
prefill instance's engine runs as a colocated one, as vLLM's kv_producer does: its P/D
requests stop at token 1 by their own ``max_tokens``, any other request runs to its end.

Faults for tests: ``fault="die_after:N"`` drops every connection once N tokens have been
produced in total; ``fault="hang_after:N"`` stops producing tokens (a stuck engine).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import numbers
import time
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

import slocore as _s
from slocore.integrations.xargs import log_refused, slo_fields
from slocore.roles import COLOCATED, DECODE, core_role, role_name
from slocore.serve.eventloop import serve_app
from slocore.serve.openai import (
    BadRequest,
    chunk,
    common_fields,
    error_body,
    full_response,
    new_id,
    parse_json,
    prompt_tokens,
    sse,
)

WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and")

logger = logging.getLogger("slocore.engine")


@dataclass
class _Req:
    events: asyncio.Queue
    prefill_only: bool = False
    t_arrival: float = 0.0
    repeat_first: bool = False  # a P/D handoff: token 1 goes out with its first step's token


@dataclass
class EngineStats:
    iterations: int = 0
    tokens: int = 0
    finished: int = 0
    preemptions: int = 0
    prompt_tokens: int = 0
    busy_s: float = 0.0
    # recent iterations: ([(request, tokens), ...], [preempted, ...]) of each sanitised plan
    history: collections.deque = field(default_factory=lambda: collections.deque(maxlen=100_000))


class EmulatedEngine:
    def __init__(
        self,
        profile: str | dict = "h100-llama2-7b",
        scheduler: str | _s.BatchScheduler = "sarathi_fcfs",
        scheduler_params: dict | None = None,
        time_scale: float = 1.0,
        max_num_seqs: int = 256,
        max_batch_tokens: int = 8192,
        kv_blocks: int | None = None,
        model: str = "slocore-emulated",
        default_max_tokens: int = 16,
        fault: str | None = None,
        engine_id: str | None = None,
        correction_window: int = 32,
        max_model_len: int | None = None,
        online_fit: bool = False,
        role: str = COLOCATED,
    ):
        from slocore.profiles import hardware_profile

        if not (time_scale > 0):
            raise ValueError(f"time_scale: must be > 0, got {time_scale}")
        if not isinstance(online_fit, bool):
            raise ValueError(f"online_fit: must be true or false, got {online_fit!r}")
        counts = dict(
            max_num_seqs=max_num_seqs, max_batch_tokens=max_batch_tokens, default_max_tokens=default_max_tokens
        )
        if kv_blocks is not None:
            counts["kv_blocks"] = kv_blocks
        if max_model_len is not None:
            counts["max_model_len"] = max_model_len
        for name, v in counts.items():  # a config's "abc" or 1.5 is refused, not cast
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
        self.role = role_name(role)  # ValueError naming the known roles
        self.hw, self.profile_data = hardware_profile(profile)
        if isinstance(scheduler, _s.BatchScheduler):
            self.scheduler_name, self.scheduler = scheduler.name(), scheduler
        else:
            self.scheduler_name = scheduler
            self.scheduler = _s.make_batch_scheduler(scheduler, dict(scheduler_params or {}))
        self.time_scale = float(time_scale)
        self.model_name = model
        self.default_max_tokens = default_max_tokens
        self.engine_id = engine_id or f"emu-{id(self):x}"
        self.max_num_seqs = max_num_seqs
        self.max_batch_tokens = max_batch_tokens
        self.kv_total = int(kv_blocks or self.hw.kv_blocks)
        self.block_size = int(self.hw.block_size)
        # the context a request may use: vLLM's max_model_len, bounded by what the KV cache holds
        kv_tokens = self.kv_total * self.block_size
        self.max_model_len = min(int(max_model_len or kv_tokens), kv_tokens)
        self.core = _s.EngineModel(
            self.hw,
            self.scheduler,
            max_batch_tokens=int(max_batch_tokens),
            max_num_seqs=int(max_num_seqs),
            kv_blocks=self.kv_total,
            correction_window=int(correction_window),
            online_fit=online_fit,
            role=core_role(DECODE if self.role == DECODE else COLOCATED),
        )
        self.model = self.core.view.model
        # `slocore serve`'s P/D (vLLM's proxy protocol): the client's first token comes from here
        self.core.view.first_token_at_decode = self.role != COLOCATED
        self.reqs: dict[int, _Req] = {}
        self.order = itertools.count()
        self.stats = EngineStats()
        kind, _, n = (fault or "").partition(":")
        if fault is not None and not (kind in ("die_after", "hang_after") and n.isdigit()):
            raise ValueError(f"fault: expected die_after:N or hang_after:N (N tokens, an integer >= 0), got {fault!r}")
        self._fault_kind, self._fault_after = (kind, int(n)) if fault is not None else (None, 0)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._t0 = time.monotonic()
        self._dead = False
        self._refused: set[str] = set()  # client SLO fields already logged as unusable
        self._hung = False
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_EngineCollector(self))

    # --- engine loop -----------------------------------------------------------------
    def now(self) -> float:
        """The engine's clock: real seconds since start / time_scale."""
        return (time.monotonic() - self._t0) / self.time_scale

    def counts(self) -> tuple[int, int, int]:
        """(running, waiting, KV blocks in use), from the engine's view."""
        v = self.core.view
        return len(v.running), len(v.waiting), self.kv_total - int(v.kv_blocks_free)

    async def _loop(self):
        try:
            await self._iterate()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never leave a client waiting on a dead loop
            self._dead = True
            for r in self.reqs.values():
                r.events.put_nowait(("die", 0, True))
            raise RuntimeError(f"emulated engine loop failed: {e}") from e

    async def _iterate(self):
        idle = 0.002
        while True:
            if not self.core.has_work or self._hung:
                self._wake.clear()
                await self._wake.wait()
                continue
            now = self.now()
            dt = self.core.start(now)  # plan, sanitise, allocate KV: the simulator's Engine::start
            if dt < 0:  # nothing can run now (e.g. no KV): wait for a change
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), idle)
                except asyncio.TimeoutError:
                    pass
                continue
            plan = self.core.plan
            self.stats.history.append(([(it.request, int(it.tokens)) for it in plan.items], list(plan.preempt)))
            await asyncio.sleep(dt * self.time_scale)
            tokens, finished, _ = self.core.finish(now + dt)  # on_batch_done, online correction
            self.stats.iterations += 1
            self.stats.preemptions = int(self.core.preemptions)
            self.stats.busy_s += dt * self.time_scale
            done = set(finished)
            for rid, generated in tokens:
                r = self.reqs.get(rid)
                if r is not None:
                    self._emit(rid, r, int(generated), rid in done)
            if self._fault_kind == "hang_after" and self.stats.tokens >= self._fault_after:
                self._hung = True

    def _emit(self, rid: int, r: _Req, generated: int, done: bool):
        if r.repeat_first:  # vLLM's decode server sends token 1 again at its first step
            r.repeat_first = False
            self._emit(rid, r, 1, False)
        self.stats.tokens += 1
        r.events.put_nowait(("token", generated, done))
        if done:
            self.reqs.pop(rid, None)
            self.stats.finished += 1
        if self._fault_kind == "die_after" and self.stats.tokens >= self._fault_after:
            self._dead = True
            for other in self.reqs.values():
                other.events.put_nowait(("die", 0, True))

    def submit(
        self,
        prompt_len: int,
        output_len: int,
        prefill_only: bool = False,
        prefilled: bool = False,
        priority: int = 0,
        ttft: float | None = None,
        tpot: float | None = None,
        handoff_ttft: float = 0.0,
    ) -> tuple[int, asyncio.Queue]:
        """Queue a request (times in the engine's clock); its token events go to the queue.
        `prefilled`: a P/D handoff whose first token came `handoff_ttft` after its arrival."""
        rid = next(self.order)
        kw = {}
        if ttft:
            kw["ttft"] = ttft
        if tpot:
            kw["tpot"] = tpot
        n_out = 1 if prefill_only else int(output_len)
        now = self.now()
        req = _s.Request(
            rid,
            now - handoff_ttft if prefilled else now,
            int(prompt_len),
            output_len=n_out,
            max_output_len=int(output_len),
            priority=int(priority),
            **kw,
        )
        st = _s.RequestState(req)
        q: asyncio.Queue = asyncio.Queue()
        r = self.reqs[rid] = _Req(q, prefill_only, t_arrival=now)
        self.stats.prompt_tokens += int(prompt_len)
        if prefilled:  # P/D handoff, as the simulator's decode engine receives it
            st.computed, st.generated, st.first_token = int(prompt_len), 1, now
            if n_out <= 1:  # nothing left to decode
                self._emit(rid, r, 1, True)
                return rid, q
            r.repeat_first = True
        self.core.add(st)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._wake.set()
        return rid, q

    def cancel(self, rid: int):
        if self.reqs.pop(rid, None) is not None:
            self.core.cancel(rid, self.now())

    # --- HTTP ------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/v1/models", self._models)
        app.on_shutdown.append(self._on_shutdown)
        return app

    async def _completions(self, request):
        return await self._handle(request, chat=False)

    async def _chat_completions(self, request):
        return await self._handle(request, chat=True)

    async def _on_shutdown(self, app):
        for r in list(self.reqs.values()):  # release handlers still waiting (a hung engine)
            r.events.put_nowait(("die", 0, True))
        if self._task is not None:
            self._task.cancel()

    async def _health(self, request):
        if self._dead:
            raise web.HTTPServiceUnavailable(text="engine dead (fault injection)")
        return web.Response(text="")

    async def _models(self, request):
        return web.json_response(
            {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "slocore"}]}
        )

    async def _metrics(self, request):
        if self._dead:
            raise web.HTTPServiceUnavailable(text="engine dead (fault injection)")
        return web.Response(body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _handle(self, request: web.Request, chat: bool):
        if self._dead:
            raise web.HTTPServiceUnavailable(text="engine dead (fault injection)")
        try:
            body = parse_json(await request.read())
            f = common_fields(body)
            plen = prompt_tokens(body, chat)
            if f["n"] != 1:
                raise BadRequest("n: the emulated engine serves n=1 only")
        except BadRequest as e:
            return web.json_response(error_body(str(e), e.status), status=e.status)
        if f["max_tokens"] == 0:  # vLLM's answer, body and status
            return web.json_response(
                error_body("max_tokens must be at least 1, got 0.", 400, "BadRequestError", "max_tokens"), status=400
            )
        max_tokens = f["max_tokens"] or self.default_max_tokens
        too_long = context_error(
            plen, max_tokens, self.max_model_len, self.max_model_len == self.kv_total * self.block_size
        )
        if too_long is not None:  # could never run: refuse as vLLM does, don't stall the queue
            return web.json_response(too_long, status=400)
        kvp = body.get("kv_transfer_params") or {}
        if not isinstance(kvp, dict):
            return web.json_response(error_body("kv_transfer_params: must be an object", 400), status=400)
        prefill_only = bool(kvp.get("do_remote_decode"))
        prefilled = bool(kvp.get("do_remote_prefill"))
        if prefilled:  # KV transfer from the prefill instance
            await asyncio.sleep(self.hw.kv_transfer_time(plen) * self.time_scale)
        # SLO fields as vLLM with the plugin reads them: unusable ones left out, never a 500
        slo, refused = slo_fields(body.get("vllm_xargs"), body.get("priority", 0))
        for key, value in refused:
            log_refused(logger, self._refused, key, value)
        ttft, tpot = slo.get("ttft"), slo.get("tpot")
        rid, q = self.submit(
            plen,
            max_tokens,
            prefill_only,
            prefilled,
            priority=slo["priority"],
            ttft=ttft / self.time_scale if ttft else None,  # real s -> the engine's clock
            tpot=tpot / self.time_scale if tpot else None,
            handoff_ttft=slo.get("handoff_ttft", 0.0) / self.time_scale,
        )
        oid = new_id(chat)
        kv_out = None
        if prefill_only:
            kv_out = {
                "do_remote_prefill": True,
                "do_remote_decode": False,
                "remote_engine_id": self.engine_id,
                "remote_block_ids": list(range(-(-plen // self.block_size))),
                "remote_host": request.host.split(":")[0],
                "remote_port": 0,
            }
        usage = lambda gen: {"prompt_tokens": plen, "completion_tokens": gen, "total_tokens": plen + gen}  # noqa: E731
        try:
            if not f["stream"]:
                texts, gen = [], 0
                while True:
                    try:
                        kind, gen, done = await asyncio.wait_for(q.get(), 0.5)
                    except asyncio.TimeoutError:  # the client left: stop generating
                        if request.transport is None or request.transport.is_closing():
                            return web.Response(status=499)
                        continue
                    if kind == "die":
                        if request.transport is not None:
                            request.transport.close()
                        raise ConnectionResetError("engine died")
                    texts.append(" " + WORDS[gen % len(WORDS)])
                    if done:
                        break
                fin = "length"
                out = full_response(
                    oid,
                    self.model_name,
                    chat,
                    ["".join(texts)],
                    [fin],
                    usage(gen),
                    {"kv_transfer_params": kv_out} if kv_out else None,
                )
                return web.json_response(_vllm_fields(out, chat))
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            await resp.prepare(request)
            so = body.get("stream_options") or {}
            include_usage = bool(so.get("include_usage"))
            continuous = include_usage and bool(so.get("continuous_usage_stats"))
            first = True
            while True:
                kind, gen, done = await q.get()
                if kind == "die":
                    request.transport.close()
                    return resp
                c = chunk(
                    oid,
                    self.model_name,
                    chat,
                    " " + WORDS[gen % len(WORDS)],
                    finish="length" if done else None,
                    first=first,
                )
                first = False
                c["choices"][0]["stop_reason"] = None
                if continuous:  # vLLM: every chunk carries the usage so far
                    c["usage"] = usage(gen)
                if done and kv_out:
                    c["kv_transfer_params"] = kv_out
                try:
                    await resp.write(sse(c))
                except (ConnectionError, RuntimeError):  # the client left: stop generating
                    return resp
                if done:
                    break
            if include_usage:
                c = chunk(oid, self.model_name, chat, "")
                c["choices"] = []
                c["usage"] = usage(gen)
                await resp.write(sse(c))
            await resp.write(sse("[DONE]"))
            await resp.write_eof()
            return resp
        finally:
            self.cancel(rid)


def context_error(prompt_len: int, max_tokens: int, max_model_len: int, kv_bound: bool = False) -> dict | None:
    """vLLM's 400 (its ``ErrorResponse``: message, ``BadRequestError``, param, code) for a
    request whose prompt + max_tokens exceed the model's context; None when it fits.
    `kv_bound`: the context is what the KV cache holds (said at the end of the message)."""
    if max_tokens > max_model_len:
        msg = (
            f"max_tokens={max_tokens} cannot be greater than max_model_len={max_model_len}. "
            "Please request fewer output tokens."
        )
        param = "max_tokens"
    elif prompt_len + max_tokens > max_model_len:
        msg = (
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{prompt_len + max_tokens} tokens ({prompt_len} in the messages, {max_tokens} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        param = "input_tokens"
    else:
        return None
    if kv_bound:
        msg += f" (The context is bounded by the KV cache: {max_model_len} tokens.)"
    return {"error": {"message": msg, "type": "BadRequestError", "param": param, "code": 400}}


def _vllm_fields(out: dict, chat: bool) -> dict:
    """The fields vLLM puts in a non-streaming answer beside OpenAI's (cheap to match)."""
    for ch in out["choices"]:
        ch["stop_reason"] = None
        if chat:
            ch["message"].update(
                refusal=None, annotations=None, audio=None, function_call=None, tool_calls=[], reasoning_content=None
            )
    out.update(service_tier=None, system_fingerprint=None, prompt_logprobs=None, prompt_token_ids=None)
    out.setdefault("kv_transfer_params", None)
    return out


class _EngineCollector:
    """The engine's /metrics, read at scrape time, under vLLM's names (the router and the
    launcher scrape it exactly like a real vLLM server)."""

    def __init__(self, engine: EmulatedEngine):
        self.e = engine

    def collect(self):
        e = self.e
        running, waiting, used = e.counts()
        labels, values = ["model_name", "engine"], [e.model_name, "0"]

        def gauge(name, doc, v):
            g = GaugeMetricFamily(name, doc, labels=labels)
            g.add_metric(values, v)
            return g

        def counter(name, doc, v):
            c = CounterMetricFamily(name, doc, labels=labels)
            c.add_metric(values, v)
            return c

        yield gauge("vllm:num_requests_running", "Requests in the running batch", running)
        yield gauge("vllm:num_requests_waiting", "Requests waiting to run", waiting)
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage (0-1)", used / max(1, e.kv_total))
        yield counter("vllm:num_preemptions", "Preemptions", e.stats.preemptions)
        yield counter("vllm:generation_tokens", "Generated tokens", e.stats.tokens)
        yield counter("vllm:prompt_tokens", "Prompt tokens", e.stats.prompt_tokens)
        yield counter("vllm:request_success", "Finished requests", e.stats.finished)
        yield gauge("slocore_engine_kv_blocks", "KV-cache blocks of the engine", e.kv_total)
        yield gauge("slocore_engine_block_size", "Tokens per KV-cache block", e.block_size)


async def start(engine: EmulatedEngine, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Serve `engine` on host:port (0 = any free port) in the running loop; returns (runner, url)."""
    # handler_cancellation: a client that leaves cancels its handler, whose `finally` frees the
    # request in the engine (a request still waiting would otherwise hold its place forever)
    return await serve_app(engine.app(), host, port, handler_cancellation=True)


def main(args) -> int:
    eng_kw = dict(
        profile=args.profile,
        scheduler=args.scheduler,
        time_scale=args.time_scale,
        max_num_seqs=args.max_num_seqs,
        model=args.model,
        fault=args.fault,
        role=args.role,
    )
    if args.scheduler_params:
        eng_kw["scheduler_params"] = dict(args.scheduler_params)

    async def run():
        engine = EmulatedEngine(**eng_kw)
        runner, url = await start(engine, args.host, args.port)
        params = json.dumps(dict(engine.scheduler.params()), sort_keys=True)
        what = f"profile {args.profile}, {engine.role}, scheduler {args.scheduler} {params}"
        print(f"slocore engine: {what}, serving {url}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    from slocore.serve.eventloop import new_event_loop

    loop = new_event_loop()
    try:
        loop.run_until_complete(run())
    except KeyboardInterrupt:
        pass
    finally:
        loop.close()
    return 0
