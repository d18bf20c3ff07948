"""The OpenAI endpoints' request flow: parse and validate (4xx with a message on bad input)
-> SLO and priority (``slo.SloResolver``) -> a ``slocore.Request`` -> the mode's flow
(``colocated.ColocatedFlow`` or ``pd.PDFlow``) picks the engine(s) -> the final engine's answer
goes to the client as the engine sent it (a streaming client gets the engine's SSE lines, with
every token time seen on the way; a non-streaming client gets the engine's own body, its
tokens dated when it arrives, as the client sees them) -> token times to the router's
``slocore.Recorder`` and metrics.

Retries: a ``BackendError`` before anything reached the client re-sends the request to
another engine (``retries``); otherwise the client gets a clear error (HTTP 502/504, or an
SSE ``error`` event then ``[DONE]`` mid-stream). The policies see one id per client request
(the recorder's), across retries: on_finished for the failed engine, then submit again.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import operator

from aiohttp import web

import slocore as _s
from slocore import _core
from slocore.integrations.xargs import HANDOFF_TTFT_FIELD
from slocore.serve import limits as _lim
from slocore.serve import tenants as _ten
from slocore.serve.admission import Admission, Shed
from slocore.serve.dispatch import NoBackend
from slocore.serve.openai import BadRequest, common_fields, error_body, prompt_tokens, sse, token_ids
from slocore.serve.retry import RetryBudget
from slocore.serve.slo import ROUTER_FIELDS
from slocore.serve.stream import ClientGone, RequestContext, read_whole, relay
from slocore.serve.upstream import BackendError, ClientError, check_status

log = logging.getLogger("slocore.serve")
_second = operator.itemgetter(1)  # a prefix segment's token count


class RequestHandler:
    def __init__(self, router):
        self.r = router  # cfg, recorder, metrics, slo, flow, upstream, now, model_name
        self.ids = itertools.count(1)  # client requests: the recorder's and every policy's id
        cfg = router.cfg
        self.labels = _lim.ClassLabels(
            [*cfg.limits.slo_classes, "priority0", *(f"priority{p}" for p in cfg.priorities)]
        )
        self.records = _lim.RecordWindow(router, cfg.limits.max_records)
        self.retry = RetryBudget(cfg.retry_budget)
        self.tenants = _ten.Tenants(cfg.tenants)
        self.admission = Admission(cfg.admission, self._waiting, router.now)
        self.labels.known.update(self.tenants.classes())

    def _waiting(self) -> collections.Counter:
        """Priority -> requests without a first token: in the router's queue or an engine's."""
        w = collections.Counter({p: n for p, n in self.r.slo.pending.items() if n > 0})
        for b in self.r.pool:
            for st in b.inflight.values():
                if st.generated == 0:
                    w[st.request.priority] += 1
        return w

    async def completions(self, request):
        return await self.handle(request, chat=False)

    async def chat_completions(self, request):
        return await self.handle(request, chat=True)

    async def handle(self, request: web.Request, chat: bool):
        try:
            return await self._handle(request, chat)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception:  # noqa: BLE001 - a bug must still answer; its cause goes to the log only
            rid = _lim.request_id(request)
            log.exception("internal error, request id %s", rid)
            return _lim.error_response(request, f"router internal error; request id {rid}", 500, "internal_error")

    async def _handle(self, request: web.Request, chat: bool):
        r = self.r
        try:
            body = await _lim.read_body(request, r.cfg.limits)
            tids = token_ids(body, r.prefix.cfg.block_size, r.prefix.max_blocks())  # read once
            _lim.check_fields(body, chat, r.cfg.limits, tids)
            f = common_fields(body)
            plen = prompt_tokens(body, chat, tids)
            tenant = self.tenants.identify(request.headers)
            sbody, shdrs = tenant.slo_inputs(body, request.headers)
            ttft, tpot, deadline, prio, cls = r.slo.resolve(sbody, shdrs)
            ttft, tpot, cls = tenant.apply(_ten.sent_fields(sbody, shdrs), ttft, tpot, cls)
            tenant.admit(plen + (f["max_tokens"] or 0))
        except BadRequest as e:
            return _lim.error_response(request, str(e), e.status)
        except _ten.Unauthorized as e:
            return _lim.error_response(request, str(e), 401, "unauthorized")
        except _ten.RateLimited as e:
            r.metrics.failed(self.labels(cls), "rate_limited")
            return _lim.error_response(
                request, str(e), 429, "rate_limit_exceeded", headers={"Retry-After": str(e.retry_after)}
            )
        cls = self.labels(cls)
        rid = next(self.ids)
        arrival = r.now()
        kw = dict(ttft=ttft, tpot=tpot, priority=prio, task=cls)
        if deadline:
            kw["deadline"] = deadline
        if f["max_tokens"]:
            kw["max_output_len"] = f["max_tokens"]
        try:
            segs = r.prefix.segments(body, chat, rid, tids)  # prefix identity (serve.prefix_index)
            template = _s.Request(rid, arrival, max(plen, sum(map(_second, segs))), prefix=segs, **kw)
            template.validate()
        except (ValueError, TypeError, OverflowError) as e:
            return _lim.error_response(request, str(e), 400)
        self.records.add(template)
        self.retry.on_request()
        try:
            return await self._admitted(
                request, ctx_args=(chat, rid, template, cls), body=body, f=f, slo=(ttft, tpot, prio)
            )
        finally:
            self.records.done(rid)

    async def _admitted(self, request, ctx_args, body: dict, f: dict, slo):
        r = self.r
        chat, rid, template, cls = ctx_args
        ttft, tpot, prio = slo
        # everything the client sent reaches the engine except the router's own fields;
        # `priority` stays (vLLM's own priority scheduling) and also goes to the policy's xargs
        fwd = {k: v for k, v in _lim.strip_router_owned(body).items() if k == "priority" or k not in ROUTER_FIELDS}
        xargs = dict(fwd.get("vllm_xargs") or {})
        xargs.pop(HANDOFF_TTFT_FIELD, None)  # the router's own (P/D, serve/pd.py), never a client's
        xargs.update(slo_ttft_ms=ttft * 1e3, slo_tpot_ms=tpot * 1e3, priority=prio)
        fwd["vllm_xargs"] = xargs
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        client_stream = f["stream"]
        ctx = RequestContext(request, chat, rid, template, cls, client_stream, want_usage)
        if client_stream:
            # the router owns only include_usage (it needs the engine's token count); the
            # client's other stream options (continuous_usage_stats) pass through
            fwd["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        try:
            self.admission.check(prio, ttft)
        except Shed as e:
            r.recorder.reject(rid, r.now(), str(e))
            r.metrics.failed(cls, "shed")
            return _lim.error_response(request, str(e), 503, "overloaded", headers={"Retry-After": str(e.retry_after)})
        sc = r.scaler
        if sc is not None:  # the scaler's events (csrc/slocore/scale/scaler.h)
            sc.arrival(template)
            ctx.on_first_token = lambda t: sc.first_token(rid, t)
        try:
            r.slo.queued(ctx)
            try:
                return await self._run_attempts(ctx, fwd)
            finally:
                r.slo.unqueued(ctx)
        finally:
            if sc is not None:  # no-op after the last token; else it left unfinished
                sc.finished(rid)

    def new_attempt(self, ctx) -> _s.Request:
        """The policy-side request for one attempt of client request ctx: a copy of its
        template (the client request's id: one id per request, across retries and P/D
        stages; copied in C++, the prefix segments never go through a Python list)."""
        return _core.copy_request(ctx.template)

    async def _run_attempts(self, ctx: RequestContext, fwd: dict):
        r = self.r
        attempts = timeouts = 0
        last: BackendError | None = None
        while True:
            try:
                body = await r.flow.prepare(ctx, fwd)
                disp = r.flow.final
                att = self.new_attempt(ctx)
                backend = await r.flow.assign(ctx, att, r.cfg.timeouts.first_token_s)
                r.slo.dispatched(ctx)
                self.admission.on_assigned()
                await self._stream(ctx, backend, disp, att, body)
                return ctx.resp or ctx.whole
            except NoBackend as e:
                if last:  # the failure's text names an engine: logged, not shown
                    log.warning("request id %s: last failure: %s", _lim.request_id(ctx.request), last)
                return await self._give_up(ctx, 503, str(e), "service_unavailable")
            except ClientError as e:
                r.recorder.reject(ctx.rid, r.now(), f"engine rejected: HTTP {e.status}")
                r.metrics.engine_rejected(ctx.cls, e.backend)  # invalid request: outside attainment
                return web.Response(status=e.status, body=e.body, content_type=e.content_type)
            except BackendError as e:
                r.upstream.fail(e)
                last = e
                timeouts += e.kind == "timeout"
                if ctx.sent or attempts >= r.cfg.retries or not self.retry.allow(e.kind, timeouts):
                    why = "after output reached the client" if ctx.sent else f"after {attempts + 1} attempt(s)"
                    return await self._give_up(
                        ctx,
                        e.status,
                        f"{e} ({why})",
                        "backend_error",
                        _lim.public_message(e, why, _lim.request_id(ctx.request)),
                    )
                attempts += 1
                r.metrics.retries.inc()
                ctx.reset()
            except ClientGone:
                r.recorder.reject(ctx.rid, r.now(), "client disconnected")
                r.metrics.failed(ctx.cls, "failed")
                return ctx.resp
            except (ConnectionResetError, asyncio.CancelledError):
                r.recorder.reject(ctx.rid, r.now(), "client disconnected")
                r.metrics.failed(ctx.cls, "failed")
                raise

    async def _give_up(self, ctx, status: int, msg: str, type_: str, public: str | None = None):
        """Fail request ctx: `msg` to the recorder and the log, `public` (default `msg`) to the client."""
        self.r.recorder.reject(ctx.rid, self.r.now(), msg)
        self.r.metrics.failed(ctx.cls, "failed")
        req_id = _lim.request_id(ctx.request)
        log.warning("request id %s: %s", req_id, msg)  # the cause, with engine names/URLs: log only
        if public is not None:
            msg = public
        if ctx.resp is not None:  # mid-stream: an SSE error event, then [DONE]
            try:
                body = error_body(msg, status, type_)
                body["error"]["request_id"] = req_id
                await ctx.resp.write(sse(body))
                await ctx.resp.write(sse("[DONE]"))
                await ctx.resp.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
            return ctx.resp
        return _lim.error_response(ctx.request, msg, status, type_)

    async def _stream(self, ctx, backend, disp, att, body: dict):
        r = self.r
        t = r.cfg.timeouts
        # a non-streaming engine says nothing until it is done: first_token_s + idle_s for all of it
        total_s = t.total_s if ctx.client_stream else min(t.total_s, t.first_token_s + t.idle_s)
        hook = ctx.on_first_token

        def first_token(tt, hook=hook):
            if hook is not None:
                hook(tt)
            disp.nudge()

        ctx.on_first_token = first_token
        try:
            async with r.upstream.post(backend, disp.policy, att, body, ctx.chat, total_s) as (resp, st):
                await check_status(backend, resp)
                if ctx.client_stream:
                    await relay(ctx, resp, st, att, backend, disp.policy, t, r.now, skip_first=r.cfg.disaggregated)
                else:
                    await read_whole(ctx, resp, st, att, backend, disp.policy, t, r.now, skip_first=r.cfg.disaggregated)
        finally:
            ctx.on_first_token = hook
            disp.nudge()
        backend.served += 1
        self.record_finished(ctx, backend)

    def record_finished(self, ctx, backend) -> None:
        """The request's token times to the recorder, its metrics, the scaler and the mapper
        (``serve.worker`` sends them to the policy process instead)."""
        r = self.r
        # a chunk may carry several tokens (or none, for a partial UTF-8 character): the
        # engine's usage count is the truth; the missing ones are dated at the end
        extra = int((ctx.usage or {}).get("completion_tokens") or 0) - len(ctx.times)
        ctx.times.extend([(r.now(), backend.id)] * max(0, extra))
        token, rid = r.recorder.token, ctx.rid
        for tt, bid in ctx.times:  # only the attempt that succeeded counts
            token(rid, tt, bid)
        t_end = r.now()
        r.recorder.finish(ctx.rid, t_end)
        if r.scaler is not None:
            r.scaler.finished(ctx.rid, t_end)
        m = _s.request_metrics(r.recorder.get(ctx.rid))
        r.metrics.finished(ctx.cls, m, backend.name)
        r.slo.finished(ctx, m)
