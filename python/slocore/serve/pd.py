"""P/D mode (backends with roles prefill and decode), vLLM's disaggregated proxy protocol:
the prompt goes to the prefill instance the prefill policy picks with ``max_tokens=1`` and
``kv_transfer_params.do_remote_decode``; the ``kv_transfer_params`` it answers with go with
the request to the decode instance the decode policy picks.

Events (``csrc/slocore/policy/global_policy.h``): the prefill policy sees submit,
on_token(1), on_prefill_done, on_finished; the decode policy submit at the handoff (or at
prefill placement with ``expected_handoff`` when ``early_assignment()``), on_prefill_done
with the prefill instance, then tokens 2..n (the decode engine's repeat of token 1 from the
transferred KV is not reported). Both see the client request's one id. The decode request
carries ``slo_handoff_ttft_ms`` (client arrival to the prefill's answer) in its ``vllm_xargs``,
so that a decode engine's scheduler dates the first token as the simulator does."""

from __future__ import annotations

import json
import math

import slocore as _s
from slocore.integrations.xargs import HANDOFF_TTFT_FIELD
from slocore.roles import DECODE, PREFILL
from slocore.serve.dispatch import Dispatcher, NoBackend
from slocore.serve.upstream import BackendError, Upstream, check_status

PREFILL_KV_PARAMS = {
    "do_remote_decode": True,
    "do_remote_prefill": False,
    "remote_engine_id": None,
    "remote_block_ids": None,
    "remote_host": None,
    "remote_port": None,
}


def prefill_body(fwd: dict) -> dict:
    """The prefill instance's request: the prompt, one token, KV kept for a remote decode."""
    pbody = {k: v for k, v in fwd.items() if k not in ("stream_options", "min_tokens")}
    pbody.update(stream=False, max_tokens=1, kv_transfer_params=dict(PREFILL_KV_PARAMS))
    pbody.pop("max_completion_tokens", None)
    return pbody


class PDFlow:
    def __init__(self, cfg, pool, metrics, now, upstream_fn, new_attempt, on_dispatched):
        self.cfg = cfg
        self.prefill = Dispatcher(
            PREFILL,
            cfg.prefill_policy.name,
            cfg.prefill_policy.params,
            lambda: pool.role(PREFILL),
            metrics,
            now,
            "prefill_policy",
        )
        self.decode = Dispatcher(
            DECODE,
            cfg.decode_policy.name,
            cfg.decode_policy.params,
            lambda: pool.role(DECODE),
            metrics,
            now,
            "decode_policy",
        )
        self.dispatchers = [self.prefill, self.decode]
        self.final = self.decode
        self.upstream_fn, self.new_attempt, self.on_dispatched = upstream_fn, new_attempt, on_dispatched
        self.now = now

    async def prepare(self, ctx, fwd: dict) -> dict:
        """Run the prompt on a prefill instance; returns the decode request body."""
        upstream: Upstream = self.upstream_fn()
        att = self.new_attempt(ctx)
        backend = await self.prefill.assign(att, self.cfg.timeouts.first_token_s)
        early = None
        if self.decode.policy.early_assignment():  # SIBYL: the decode instance at prefill start
            tau = _s.expected_handoff(backend.view(), att, self.now())
            try:
                early = self.decode.submit(att, tau)
            except NoBackend:  # no decode instance: the prefill placement ends unused
                self.prefill.policy.on_finished(att.id, backend.id, self.now())
                raise
            self.decode.poll_now()
        ctx.handoff = (backend.id, early)
        self.on_dispatched(ctx)
        try:
            async with upstream.post(
                backend,
                self.prefill.policy,
                att,
                prefill_body(fwd),
                ctx.chat,
                self.cfg.timeouts.first_token_s,
                what="prefill",
            ) as (r, st):
                await check_status(backend, r)
                raw = await r.read()
                try:
                    out = json.loads(raw)
                except ValueError as e:
                    raise BackendError(backend, "connection", f"prefill failed: {type(e).__name__}: {e}") from None
                t = self.now()  # the handoff: token 1, prefill done (on_finished on the way out)
                st.generated = 1
                self.prefill.policy.on_token(att.id, backend.id, 1, t)
                self.prefill.policy.on_prefill_done(att.id, backend.id, t)
                if ctx.on_first_token is not None:  # the scaler: the first token is the prefill's
                    ctx.on_first_token(t)
        except BaseException:
            if early is not None:
                self.decode.abandon(att.id, early)
            raise
        backend.served += 1
        dbody = dict(fwd)
        # the decode engine dates token 1 at its arrival and the client's that much earlier
        xargs = dict(dbody.get("vllm_xargs") or {})
        xargs[HANDOFF_TTFT_FIELD] = max(0.0, t - ctx.template.arrival) * 1e3
        dbody["vllm_xargs"] = xargs
        kvp = out.get("kv_transfer_params")
        if kvp:
            dbody["kv_transfer_params"] = kvp
        return dbody

    async def assign(self, ctx, req, timeout: float):
        """The decode instance (after ``prepare``): on_prefill_done at the handoff, then the
        early choice or submit-and-poll."""
        prefill_id, early = ctx.handoff
        done = lambda: self.decode.policy.on_prefill_done(req.id, prefill_id, self.now())  # noqa: E731
        if early is None:
            return await self.decode.assign(req, timeout, math.nan, done)
        done()
        self.decode.poll_now()
        return await self.decode.wait(req, early, timeout)
