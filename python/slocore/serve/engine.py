"""Emulated engine: vLLM's OpenAI API with token timing from a hardware profile.

One continuous-batching loop, as the simulator's engine: each iteration asks a slocore
batch scheduler (by name, default ``sarathi_fcfs``) which requests run with how many tokens,
sleeps for the iteration time the profile's latency model gives for that batch (times
``time_scale``), then advances every scheduled request (a finished prefill yields the first
token; a decode yields one). ``/metrics`` carries vLLM's names
(``vllm:num_requests_running``, ``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc``)
so the router polls it exactly like a real vLLM server.

P/D: a request with ``kv_transfer_params.do_remote_decode`` stops after its prefill and
answers with ``kv_transfer_params`` for the decode side; one with
``kv_transfer_params.do_remote_prefill`` skips its prefill after the profile's KV-transfer
time (the fields vLLM's disaggregated proxies pass).

Faults for tests: ``fault="die_after:N"`` drops every connection once N tokens have been
produced in total; ``fault="hang_after:N"`` stops producing tokens (a stuck engine).
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

import slocore as _s
from slocore.serve.openai import BadRequest, chunk, common_fields, error_body, full_response, new_id, parse_json, \
    prompt_tokens, sse

WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and")


@dataclass
class _Req:
    state: object  # slocore.RequestState
    output_len: int
    events: asyncio.Queue
    prefill_only: bool = False
    running: bool = False
    blocks: int = 0
    t_arrival: float = 0.0


@dataclass
class EngineStats:
    iterations: int = 0
    tokens: int = 0
    finished: int = 0
    preemptions: int = 0
    prompt_tokens: int = 0
    busy_s: float = 0.0
    history: list = field(default_factory=list)


class EmulatedEngine:
    def __init__(self, profile: str | dict = "h100-llama2-7b", scheduler: str = "sarathi_fcfs",
                 scheduler_params: dict | None = None, time_scale: float = 1.0, max_num_seqs: int = 256,
                 max_batch_tokens: int = 8192, kv_blocks: int | None = None, model: str = "slocore-emulated",
                 default_max_tokens: int = 16, fault: str | None = None, engine_id: str | None = None):
        from slocore.profiles import hardware_profile

        if not (time_scale > 0):
            raise ValueError(f"time_scale: must be > 0, got {time_scale}")
        self.hw, self.profile_data = hardware_profile(profile)
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
        self.model = _s.LatencyModel(self.hw.coeffs)
        self.reqs: dict[int, _Req] = {}
        self.order = itertools.count()
        self.stats = EngineStats()
        self.fault = fault
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._t0 = time.monotonic()
        self._dead = False
        self._hung = False
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_EngineCollector(self))

    # --- engine loop -----------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self._t0

    def _view(self):
        v = _s.InstanceView(0)
        v.model = self.model
        v.block_size = self.block_size
        v.kv_blocks_total = self.kv_total
        used = sum(r.blocks for r in self.reqs.values() if r.running)
        v.kv_blocks_free = max(0, self.kv_total - used)
        v.max_num_seqs = self.max_num_seqs
        v.max_batch_tokens = self.max_batch_tokens
        v.running = [r.state for r in self.reqs.values() if r.running]
        v.waiting = [r.state for r in self.reqs.values() if not r.running]
        return v

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
            if not self.reqs or self._hung:
                self._wake.clear()
                await self._wake.wait()
                continue
            now = self.now()
            plan = self.scheduler.schedule(self._view(), now)
            for rid in plan.preempt:
                r = self.reqs.get(rid)
                if r is not None and r.running:
                    r.running, r.blocks = False, 0
                    r.state.computed = 0
                    self.stats.preemptions += 1
            if not plan.items:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), idle)
                except asyncio.TimeoutError:
                    pass
                continue
            items = []
            for it in plan.items:
                st = self.reqs[it.request].state
                items.append(_s.BatchItem(int(it.tokens), int(st.computed), bool(st.in_prefill)))
            dt = self.model.batch_time(items)
            await asyncio.sleep(dt * self.time_scale)
            self.stats.iterations += 1
            self.stats.busy_s += dt * self.time_scale
            t = self.now()
            for it in plan.items:
                r = self.reqs.get(it.request)
                if r is None:  # cancelled during the iteration
                    continue
                st = r.state
                r.running = True
                st.computed = min(int(st.num_tokens), int(st.computed) + int(it.tokens))
                r.blocks = -(-int(st.computed) // self.block_size)
                if st.computed >= st.num_tokens:
                    st.generated = st.generated + 1
                    self._emit(it.request, r, t)
            if self.fault and self.fault.startswith("hang_after:") and self.stats.tokens >= int(self.fault.split(":")[1]):
                self._hung = True

    def _emit(self, rid: int, r: _Req, t: float):
        st = r.state
        self.stats.tokens += 1
        done = st.generated >= r.output_len or r.prefill_only
        r.events.put_nowait(("token", int(st.generated), done))
        if done:
            self.reqs.pop(rid, None)
            self.scheduler.on_finished(rid, t)
            self.stats.finished += 1
        if self.fault and self.fault.startswith("die_after:") and self.stats.tokens >= int(self.fault.split(":")[1]):
            self._dead = True
            for other in self.reqs.values():
                other.events.put_nowait(("die", 0, True))

    def submit(self, prompt_len: int, output_len: int, prefill_only: bool = False, prefilled: bool = False,
               priority: int = 0, ttft: float | None = None, tpot: float | None = None) -> tuple[int, asyncio.Queue]:
        rid = next(self.order)
        kw = {}
        if ttft:
            kw["ttft"] = ttft
        if tpot:
            kw["tpot"] = tpot
        req = _s.Request(rid, self.now(), int(prompt_len), max_output_len=int(output_len), priority=int(priority), **kw)
        st = _s.RequestState(req)
        if prefilled:  # P/D handoff: KV of prompt[:-1] arrived, the last prompt token is computed here
            st.computed = int(prompt_len) - 1
        q: asyncio.Queue = asyncio.Queue()
        self.reqs[rid] = _Req(st, 1 if prefill_only else int(output_len), q, prefill_only, t_arrival=self.now())
        self.stats.prompt_tokens += int(prompt_len)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._wake.set()
        return rid, q

    def cancel(self, rid: int):
        if self.reqs.pop(rid, None) is not None:
            self.scheduler.on_finished(rid, self.now())

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
        return web.json_response({"object": "list", "data": [{"id": self.model_name, "object": "model",
                                                               "owned_by": "slocore"}]})

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
        max_tokens = f["max_tokens"] or self.default_max_tokens
        kvp = body.get("kv_transfer_params") or {}
        if not isinstance(kvp, dict):
            return web.json_response(error_body("kv_transfer_params: must be an object", 400), status=400)
        prefill_only = bool(kvp.get("do_remote_decode"))
        prefilled = bool(kvp.get("do_remote_prefill"))
        if prefilled:  # KV transfer from the prefill instance
            await asyncio.sleep(self.hw.kv_transfer_time(plen) * self.time_scale)
        xargs = body.get("vllm_xargs") or {}
        ttft = xargs.get("slo_ttft_ms") if isinstance(xargs, dict) else None
        tpot = xargs.get("slo_tpot_ms") if isinstance(xargs, dict) else None
        rid, q = self.submit(plen, max_tokens, prefill_only, prefilled,
                             priority=int(xargs.get("priority", 0)) if isinstance(xargs, dict) else 0,
                             ttft=ttft / 1e3 if ttft else None, tpot=tpot / 1e3 if tpot else None)
        oid = new_id(chat)
        kv_out = None
        if prefill_only:
            kv_out = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": self.engine_id,
                      "remote_block_ids": list(range(-(-plen // self.block_size))),
                      "remote_host": request.host.split(":")[0], "remote_port": 0}
        usage = lambda gen: {"prompt_tokens": plen, "completion_tokens": gen, "total_tokens": plen + gen}  # noqa: E731
        try:
            if not f["stream"]:
                texts, gen = [], 0
                while True:
                    kind, gen, done = await q.get()
                    if kind == "die":
                        request.transport.close()
                        raise ConnectionResetError("engine died")
                    texts.append(" " + WORDS[gen % len(WORDS)])
                    if done:
                        break
                fin = "length"
                return web.json_response(full_response(oid, self.model_name, chat, ["".join(texts)], [fin], usage(gen),
                                                       {"kv_transfer_params": kv_out} if kv_out else None))
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            await resp.prepare(request)
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            first = True
            while True:
                kind, gen, done = await q.get()
                if kind == "die":
                    request.transport.close()
                    return resp
                c = chunk(oid, self.model_name, chat, " " + WORDS[gen % len(WORDS)], finish="length" if done else None,
                          first=first)
                first = False
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


class _EngineCollector:
    """The engine's /metrics, read at scrape time, under vLLM's names (the router and the
    launcher scrape it exactly like a real vLLM server)."""

    def __init__(self, engine: "EmulatedEngine"):
        self.e = engine

    def collect(self):
        e = self.e
        running = sum(1 for r in e.reqs.values() if r.running)
        used = sum(r.blocks for r in e.reqs.values() if r.running)
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
        yield gauge("vllm:num_requests_waiting", "Requests waiting to run", len(e.reqs) - running)
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage (0-1)", used / max(1, e.kv_total))
        yield counter("vllm:num_preemptions", "Preemptions", e.stats.preemptions)
        yield counter("vllm:generation_tokens", "Generated tokens", e.stats.tokens)
        yield counter("vllm:prompt_tokens", "Prompt tokens", e.stats.prompt_tokens)
        yield counter("vllm:request_success", "Finished requests", e.stats.finished)
        yield gauge("slocore_engine_kv_blocks", "KV-cache blocks of the engine", e.kv_total)
        yield gauge("slocore_engine_block_size", "Tokens per KV-cache block", e.block_size)


async def start(engine: EmulatedEngine, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Serve `engine` on host:port (0 = any free port) in the running loop; returns (runner, url)."""
    runner = web.AppRunner(engine.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://{host}:{port}"


def main(args) -> int:
    eng_kw = dict(profile=args.profile, scheduler=args.scheduler, time_scale=args.time_scale,
                  max_num_seqs=args.max_num_seqs, model=args.model, fault=args.fault)
    if args.scheduler_params:
        eng_kw["scheduler_params"] = json.loads(args.scheduler_params)

    async def run():
        engine = EmulatedEngine(**eng_kw)
        runner, url = await start(engine, args.host, args.port)
        print(f"slocore engine: profile {args.profile}, scheduler {args.scheduler}, serving {url}", flush=True)
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
