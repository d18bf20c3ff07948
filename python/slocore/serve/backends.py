"""Engine backends as the router sees them: its own bookkeeping of what it sent where
(requests waiting for a first token, running with their progress) plus what each engine's
``/metrics`` says (vLLM's names: running / waiting requests, KV-cache usage), merged into
the ``slocore.InstanceView`` the policies read. Polling lives in ``health``, the set of
backends and quarantine in ``pool``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

import slocore as _s
from slocore.roles import core_role

PHANTOM_ID = 1 << 62  # ids of load the router did not send (seen in /metrics only)


def parse_vllm_metrics(text: str) -> dict:
    """Sum the scheduling-relevant vLLM gauges over label sets (one engine may report several)."""
    want = {
        "vllm:num_requests_running": "running",
        "vllm:num_requests_waiting": "waiting",
        "vllm:kv_cache_usage_perc": "kv_usage",
        "vllm:gpu_cache_usage_perc": "kv_usage",
        "slocore_engine_kv_blocks": "kv_blocks",
        "slocore_engine_block_size": "block_size",
    }
    out: dict = {}
    for fam in text_string_to_metric_families(text):
        key = want.get(fam.name)
        if key is None:
            continue
        vals = [s.value for s in fam.samples if s.name == fam.name]
        if not vals:
            continue
        out[key] = max(vals) if key in ("kv_usage", "kv_blocks", "block_size") else sum(vals)
    return out


@dataclass
class Backend:
    id: int
    name: str
    url: str
    role: str
    model: object  # slocore.LatencyModel (the policies' belief)
    kv_blocks: int
    block_size: int
    healthy: bool = True
    last_error: str = ""
    polled: dict = field(default_factory=dict)
    last_poll: float = 0.0
    # router bookkeeping: attempt id -> RequestState
    inflight: dict = field(default_factory=dict)
    served: int = 0
    failures: int = 0  # requests that failed on this engine
    poll_failures: int = 0  # consecutive failed /metrics polls (health's hysteresis)
    draining: bool = False  # the scaler is retiring it: no new work (serve/scaler.py)
    prefix_index: object = None  # slocore.ApproxPrefixIndex of what was sent here (serve.prefix_index)
    kv_events: object = None  # serve.kv_events.KvBlockSet when the engine publishes KV events
    max_batch_tokens: int | None = None  # the engine's per-iteration token budget, when its profile says

    def view(self) -> _s.InstanceView:
        return build_view(
            self.id,
            self.role,
            self.model,
            self.block_size,
            self.kv_blocks,
            self.inflight.values(),
            self.polled,
            accepting=self.healthy and not self.draining,
            prefix_index=self.prefix_index,
            prefix_cache=self.kv_events.lookup if self.kv_events is not None and self.kv_events.fresh() else None,
            max_batch_tokens=self.max_batch_tokens,
        )

    def describe(self) -> dict:
        return {
            "name": self.name,
            "url": self.url,
            "role": self.role,
            "healthy": self.healthy,
            "last_error": self.last_error,
            "inflight": len(self.inflight),
            "served": self.served,
            "failures": self.failures,
            "engine_metrics": self.polled,
        }


def build_view(
    iid: int,
    role: str,
    model,
    block_size: int,
    kv_blocks: int,
    own,
    polled: dict,
    accepting: bool = True,
    prefix_index=None,
    prefix_cache=None,
    max_batch_tokens: int | None = None,
) -> _s.InstanceView:
    """The ``slocore.InstanceView`` of one engine: the router's own requests on it (`own`,
    ``RequestState``s; running once they have a token) merged with what the engine reports
    (`polled`, ``parse_vllm_metrics`` keys: running, waiting, kv_usage, kv_blocks, block_size).
    Load the router did not send shows up as phantom waiting requests. Shared by `slocore
    serve` and the Ray Serve router (``slocore.integrations.ray_serve``)."""
    v = _s.InstanceView(iid, core_role(role))
    v.model = model
    v.block_size = block_size
    if max_batch_tokens:  # else InstanceView's default
        v.max_batch_tokens = int(max_batch_tokens)
    kv_total = int(polled.get("kv_blocks", kv_blocks))
    v.kv_blocks_total = kv_total
    own = list(own)
    running = [s for s in own if s.generated > 0]
    waiting = [s for s in own if s.generated == 0]
    extra = int(polled.get("running", 0) + polled.get("waiting", 0)) - len(own)
    for k in range(max(0, extra)):
        waiting.append(_s.RequestState(_s.Request(PHANTOM_ID + k, 0.0, 1)))
    v.running = running
    v.waiting = waiting
    used = 0
    if "kv_usage" in polled:
        used = int(round(float(polled["kv_usage"]) * kv_total))
    used = max(used, sum(-(-int(s.context_len) // block_size) for s in running))
    v.kv_blocks_free = max(0, kv_total - used)
    v.accepting = accepting
    if prefix_index is not None:
        v.prefix_index = prefix_index
    if prefix_cache is not None:  # stale or absent: approximate
        v.prefix_cache = prefix_cache
    return v
