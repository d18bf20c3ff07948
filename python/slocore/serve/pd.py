"""P/D mode (backends with roles prefill and decode), vLLM's disaggregated proxy protocol:
the prompt goes to the prefill instance the prefill policy picks with ``max_tokens=1`` and
``kv_transfer_params.do_remote_decode``; the ``kv_transfer_params`` it answers with go with
the request to the decode instance the decode policy picks."""
from __future__ import annotations

import json

from slocore.roles import DECODE, PREFILL
from slocore.serve.dispatch import Dispatcher
from slocore.serve.upstream import BackendError, Upstream, check_status

PREFILL_KV_PARAMS = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                     "remote_block_ids": None, "remote_host": None, "remote_port": None}


def prefill_body(fwd: dict) -> dict:
    """The prefill instance's request: the prompt, one token, KV kept for a remote decode."""
    pbody = {k: v for k, v in fwd.items() if k not in ("stream_options", "min_tokens")}
    pbody.update(stream=False, max_tokens=1, kv_transfer_params=dict(PREFILL_KV_PARAMS))
    pbody.pop("max_completion_tokens", None)
    return pbody


class PDFlow:
    def __init__(self, cfg, pool, metrics, now, upstream_fn, new_attempt, on_dispatched):
        self.cfg = cfg
        self.prefill = Dispatcher(PREFILL, cfg.prefill_policy.name, cfg.prefill_policy.params,
                                  lambda: pool.role(PREFILL), metrics, now)
        self.decode = Dispatcher(DECODE, cfg.decode_policy.name, cfg.decode_policy.params,
                                 lambda: pool.role(DECODE), metrics, now)
        self.dispatchers = [self.prefill, self.decode]
        self.final = self.decode
        self.upstream_fn, self.new_attempt, self.on_dispatched = upstream_fn, new_attempt, on_dispatched

    async def prepare(self, ctx, fwd: dict) -> dict:
        """Run the prompt on a prefill instance; returns the decode request body."""
        upstream: Upstream = self.upstream_fn()
        att = self.new_attempt(ctx)
        backend = await self.prefill.assign(att, self.cfg.timeouts.first_token_s)
        self.on_dispatched(ctx)
        async with upstream.post(backend, self.prefill.policy, att, prefill_body(fwd), ctx.chat,
                                 self.cfg.timeouts.first_token_s, what="prefill") as (r, _):
            await check_status(backend, r)
            raw = await r.read()
            try:
                out = json.loads(raw)
            except ValueError as e:
                raise BackendError(backend, "connection", f"prefill failed: {type(e).__name__}: {e}") from None
        backend.served += 1
        dbody = dict(fwd)
        kvp = out.get("kv_transfer_params")
        if kvp:
            dbody["kv_transfer_params"] = kvp
        return dbody
