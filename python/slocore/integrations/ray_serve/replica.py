"""The replica side: what a Ray Serve replica reports to the slocore router (routing stats)
and to the slocore autoscaling policy (autoscaling stats), and a replica that serves the
emulated engine (``slocore.serve.engine.EmulatedEngine``) in-process.

``SloReplicaStats`` is a mixin for any deployment class: implement ``slo_engine_stats()``
(running and waiting requests, KV usage as vLLM's gauges name them) and call
``slo_arrived`` / ``slo_first_token`` / ``slo_finished`` from the request path; Ray Serve
calls ``record_routing_stats`` (routing stats, read by ``SloRequestRouter``) and
``record_autoscaling_stats`` (read by ``SloAutoscalingPolicy``) on its own schedule.
"""

from __future__ import annotations

import math

from slocore.integrations.ray_serve.request import parse_request

ENGINE_KEYS = ("running", "waiting", "kv_usage", "kv_blocks", "block_size")


class SloReplicaStats:
    """Counters of the scaler's events on this replica (HFX Alg. 3 needs arrivals, first
    tokens and completions with the arrivals' TTFT SLOs) and the engine's gauges."""

    _slo_counts: dict

    def _slo_counters(self) -> dict:
        if not hasattr(self, "_slo_counts"):
            self._slo_counts = {"arrivals": 0, "first_tokens": 0, "finished": 0, "ttft_sum": 0.0, "tokens": 0}
        return self._slo_counts

    def slo_engine_stats(self) -> dict:
        """running, waiting, kv_usage (0-1), kv_blocks, block_size of the engine behind this replica."""
        raise NotImplementedError

    def slo_arrived(self, ttft_s: float) -> None:
        c = self._slo_counters()
        c["arrivals"] += 1
        c["ttft_sum"] += float(ttft_s) if math.isfinite(ttft_s) else 0.0

    def slo_first_token(self) -> None:
        self._slo_counters()["first_tokens"] += 1

    def slo_token(self) -> None:
        self._slo_counters()["tokens"] += 1

    def slo_finished(self) -> None:
        self._slo_counters()["finished"] += 1

    def record_routing_stats(self) -> dict:
        out = {k: float(v) for k, v in self.slo_engine_stats().items() if k in ENGINE_KEYS}
        out["generated_tokens"] = float(self._slo_counters()["tokens"])
        return out

    def record_autoscaling_stats(self) -> dict:
        c = self._slo_counters()
        out = {k: float(v) for k, v in self.slo_engine_stats().items() if k in ENGINE_KEYS}
        out.update({k: float(v) for k, v in c.items()})
        return out


class EmulatedEngineReplica(SloReplicaStats):
    """A Ray Serve deployment class serving one emulated engine (the simulator's engine
    model paced by real time; ``time_scale`` as ``slocore engine``). ``generate(body)``
    streams dicts with the output-token count so far (tokens that arrive together share
    one chunk); ``__call__(body)`` answers when done.

    `background`: load from other clients that reaches this engine without the router, by
    replica rank: ``{rank: {"n": requests, "prompt": tokens, "output": tokens}}`` (started
    on the first request or stats call); routers see it only through the routing stats.
    """

    def __init__(self, profile: str = "h100-llama2-7b", time_scale: float = 0.05, background: dict | None = None, **kw):
        from slocore.serve.engine import EmulatedEngine

        self.engine = EmulatedEngine(profile=profile, time_scale=time_scale, **kw)
        self.time_scale = float(time_scale)
        self.rank = _replica_rank()
        self._background = dict((background or {}).get(self.rank) or (background or {}).get(str(self.rank)) or {})
        self._started = False

    def _start_background(self) -> None:
        if self._started:
            return
        self._started = True
        b = self._background
        for _ in range(int(b.get("n", 0))):
            self.engine.submit(int(b.get("prompt", 1000)), int(b.get("output", 1000)))

    def slo_engine_stats(self) -> dict:
        running, waiting, used = self.engine.counts()
        return {
            "running": running,
            "waiting": waiting,
            "kv_usage": used / max(1, self.engine.kv_total),
            "kv_blocks": self.engine.kv_total,
            "block_size": self.engine.block_size,
        }

    async def record_routing_stats(self) -> dict:
        self._start_background()
        return SloReplicaStats.record_routing_stats(self)

    async def record_autoscaling_stats(self) -> dict:
        return SloReplicaStats.record_autoscaling_stats(self)

    async def generate(self, body):
        """Chunks {generated, done, replica}: output tokens so far, this replica's rank."""
        self._start_background()
        r = parse_request(body)
        ttft = r.ttft if math.isfinite(r.ttft) else None
        tpot = r.tpot if math.isfinite(r.tpot) else None
        rid, q = self.engine.submit(r.prompt_len, r.output_len, ttft=ttft, tpot=tpot)
        self.slo_arrived(r.ttft)
        done = False
        try:
            last = 0
            while not done:
                events = [await q.get()]
                while not q.empty():  # tokens that arrived together travel in one chunk
                    events.append(q.get_nowait())
                for kind, generated, fin in events:
                    done = done or fin
                    if kind == "die":
                        raise RuntimeError("emulated engine failed")
                    self.slo_token()
                    if generated == 1:
                        self.slo_first_token()
                    last = int(generated)
                yield {"generated": last, "done": bool(done), "replica": self.rank}
        finally:
            if not done:
                self.engine.cancel(rid)
            self.slo_finished()

    async def __call__(self, body) -> dict:
        n = 0
        async for chunk in self.generate(body):
            n = chunk["generated"]
        return {"generated": n, "replica": self.rank}

    async def check_health(self) -> None:
        if self.engine._dead:
            raise RuntimeError("emulated engine loop failed")


def _replica_rank() -> int:
    """This replica's rank in its deployment (0 outside Ray Serve)."""
    try:
        from ray import serve

        rank = serve.get_replica_context().rank
        return int(getattr(rank, "rank", rank))
    except Exception:  # noqa: BLE001 - not in a replica (unit tests), or an older Ray
        return 0
