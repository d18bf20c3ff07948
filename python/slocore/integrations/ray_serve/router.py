"""``SloRequestRouter``: a Ray Serve request router that places requests with a slocore
global policy, following the event contract of ``csrc/slocore/policy/global_policy.h``.

Ray Serve builds one router per deployment handle in the caller's process (the proxy, an
ingress replica, or a driver) and asks it for replicas (``choose_replicas``) once per
routing attempt. Here:

- ``submit`` at the request's first routing attempt (one slocore id per request, also
  across Ray's retries), then ``poll`` with the views of the replicas; a push policy answers
  at once, a pull policy (HFX) when ``poll`` releases the request: until then the router
  returns no replica and Ray backs off and asks again.
- Views (``slocore.serve.backends.build_view``, as ``slocore serve``): the requests this
  router sent and has not seen finish, plus the replica's routing stats
  (``SloReplicaStats.record_routing_stats``: running / waiting requests, KV usage), whose
  excess over this router's own is load from other routers.
- ``on_token``: requests sent through ``SloHandle`` (``handle.py``) report each streamed
  token; ``on_finished`` when the stream ends, or, for other requests, when Ray reports the
  request completed (``on_request_completed``). A request abandoned before it got a replica
  gets ``on_cancelled``. A retry after a failed replica is ``on_finished`` on it, then a
  new ``submit`` with the same id.

Router kwargs (``RequestRouterConfig.request_router_kwargs``): ``policy`` (a registered
name or ``module:Class``; default ``DEFAULT_POLICY``), ``policy_params``, ``profile`` (the
policies' latency model of a replica), ``classes`` ({name: {ttft_ms, tpot_ms}}) and
``default_slo``, ``clock_scale`` (seconds of the policy's clock per real second: the emulated
engine's ``1/time_scale``).
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import threading
import time
from dataclasses import dataclass, field

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

import slocore as _s
from slocore.integrations.ray_serve import state
from slocore.integrations.ray_serve.request import parse_request
from slocore.roles import COLOCATED
from slocore.serve.backends import build_view
from slocore.serve.dispatch import make_policy

log = logging.getLogger("slocore.ray_serve")

# The default policy: least_outstanding, the strongest baseline router. The `slocore`
# preset's slo_predict (policy="slo_predict") is not the default: it sent requests to a
# replica loaded from outside whenever their predicted latency there was within its margin
# (tests/test_ray_serve.py forbids that), and it did not beat Ray's router (docs/ray_serve.md).
DEFAULT_POLICY = "least_outstanding"
DEFAULT_PROFILE = "h100-llama2-7b"


@dataclass
class _Entry:
    rid: int
    state: object  # slocore.RequestState
    key: str
    tracked: bool  # an SloHandle reports its tokens and its end
    pending: object = None  # the PendingRequest while it waits for a replica
    instance: int | None = None  # the policy's assignment
    routed: bool = False
    t_submit: float = 0.0  # monotonic, for the routing latency
    finished: bool = False
    internal_ids: set = field(default_factory=set)


class SloRequestRouter(RequestRouter):
    """Ray Serve RequestRouter over a slocore global policy (module docstring)."""

    def initialize_state(
        self,
        policy: str = DEFAULT_POLICY,
        policy_params: dict | None = None,
        profile: str = DEFAULT_PROFILE,
        classes: dict | None = None,
        default_slo: dict | None = None,
        clock_scale: float = 1.0,
        role: str = COLOCATED,
        **unknown,
    ):
        if unknown:
            raise TypeError(f"request_router_kwargs: unknown keys {sorted(unknown)}")
        if not (isinstance(clock_scale, (int, float)) and clock_scale > 0):
            raise ValueError(f"request_router_kwargs.clock_scale: must be > 0, got {clock_scale!r}")
        from slocore.profiles import engine_token_budget, hardware_profile

        self.policy = make_policy(policy, dict(policy_params or {}), "request_router_kwargs.policy")
        hw, data = hardware_profile(profile)
        self.model = _s.LatencyModel(hw.coeffs)
        self.max_batch_tokens = engine_token_budget(data)
        self.kv_blocks, self.block_size = int(hw.kv_blocks), int(hw.block_size)
        self.classes, self.default_slo = classes, default_slo
        self.clock_scale = float(clock_scale)
        self.role = role
        self.t0 = time.monotonic()
        self.lock = threading.RLock()  # Ray's router loop and the SloHandle's loop both call in
        self.ids = itertools.count()
        self.iids = itertools.count()
        self.iid_of: dict[ReplicaID, int] = {}
        self.replica_of: dict[int, RunningReplica] = {}
        self.entries: dict[str, _Entry] = {}  # key -> entry
        self.by_internal: dict[str, str] = {}  # Ray's internal request id -> key
        self.assigned: dict[int, int] = {}  # rid -> instance, from polls, not yet picked up
        self.decisions = 0
        self.rejected = 0
        self.routing_s: collections.deque = collections.deque(maxlen=10_000)  # submit -> sent to the replica
        state.ROUTERS.append(self)

    # --- clock and instances ----------------------------------------------------------------
    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.clock_scale

    def _sync_instances(self) -> None:
        current = self.curr_replicas
        now = self.now()
        for rid_, rep in current.items():
            if rid_ not in self.iid_of:
                iid = next(self.iids)
                self.iid_of[rid_] = iid
                self.policy.on_instance_added(iid, _s_role(self.role), now)
            self.replica_of[self.iid_of[rid_]] = rep
        for rid_ in [r for r in self.iid_of if r not in current]:
            iid = self.iid_of.pop(rid_)
            self.replica_of.pop(iid, None)
            self.policy.on_instance_removed(iid, now)

    def views(self, candidates) -> list:
        accepting = {r.replica_id for r in candidates}
        own: dict[int, list] = {}
        for e in self.entries.values():
            if not e.finished and e.instance is not None:  # assigned: on its way or there
                own.setdefault(e.instance, []).append(e.state)
        out = []
        for rid_, iid in self.iid_of.items():
            rep = self.replica_of.get(iid)
            stats = dict(getattr(rep, "routing_stats", None) or {})
            out.append(
                build_view(
                    iid,
                    self.role,
                    self.model,
                    int(stats.get("block_size", self.block_size)),
                    self.kv_blocks,
                    own.get(iid, ()),
                    stats,
                    accepting=rid_ in accepting,
                    max_batch_tokens=self.max_batch_tokens,
                )
            )
        return out

    # --- routing ------------------------------------------------------------------------------
    async def choose_replicas(
        self, candidate_replicas: list[RunningReplica], pending_request: PendingRequest | None = None
    ) -> list[list[RunningReplica]]:
        if pending_request is None:  # nothing to place (Ray probing): any replica
            return [candidate_replicas]
        with self.lock:
            self._sync_instances()
            self._cancel_abandoned()
            e = self._entry(pending_request)
            if e is None:  # a body the router cannot read: Ray's order, the policy never sees it
                return [candidate_replicas]
            if e.instance is None:
                self._poll(candidate_replicas)
            if e.instance is not None and e.instance not in self.replica_of:  # the replica left: retry
                self.policy.on_finished(e.rid, e.instance, self.now())
                e.instance, e.routed = None, False
                e.state = _s.RequestState(e.state.request)
                self.policy.submit(e.state.request, self.now(), math.nan)
                self._poll(candidate_replicas)
            if e.instance is None:
                pending_request.routing_context.should_backoff = True
                return []
            return [[self.replica_of[e.instance]]]

    def _entry(self, pr: PendingRequest) -> _Entry | None:
        md = pr.metadata
        key = self.by_internal.get(md.internal_request_id)
        e = self.entries.get(key) if key is not None else None
        if e is not None and not e.finished:
            return e
        body = pr.args[0] if pr.args else next(iter(pr.kwargs.values()), None)
        try:
            p = parse_request(body, self.classes, self.default_slo)
        except (ValueError, TypeError, KeyError) as err:
            self.rejected += 1
            log.warning("slocore router: request %s not scheduled by the policy: %s", md.request_id, err)
            return None
        rid = e.rid if e is not None else next(self.ids)  # a retry keeps its id
        key = p.key or md.internal_request_id
        kw = {k: v for k, v in (("ttft", p.ttft), ("tpot", p.tpot)) if math.isfinite(v)}
        req = _s.Request(rid, self.now(), p.prompt_len, output_len=p.output_len, task=p.task, **kw)
        e = _Entry(rid, _s.RequestState(req), key, tracked=p.key is not None, pending=pr, t_submit=time.monotonic())
        e.internal_ids.add(md.internal_request_id)
        self.entries[key] = e
        self.by_internal[md.internal_request_id] = key
        if e.tracked:
            state.BY_KEY[key] = self
        self.policy.submit(req, self.now(), math.nan)
        return e

    def _poll(self, candidates) -> None:
        asg = self.policy.poll(self.now(), self.views(candidates))
        by_rid = {e.rid: e for e in self.entries.values() if not e.finished}
        for a in asg:
            self.decisions += 1
            e = by_rid.get(a.request)
            if e is not None and e.instance is None:
                e.instance = int(a.instance)
                e.pending = None

    def _cancel_abandoned(self) -> None:
        """on_cancelled for requests whose caller gave up before they got a replica."""
        for e in list(self.entries.values()):
            pr = e.pending
            if e.instance is None and pr is not None and pr.future.cancelled():
                self.policy.on_cancelled(e.rid, self.now())
                self._forget(e)

    # --- Ray's callbacks ----------------------------------------------------------------------
    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result) -> None:
        with self.lock:
            key = self.by_internal.get(pending_request.metadata.internal_request_id)
            e = self.entries.get(key) if key is not None else None
            if e is None or e.finished:
                return
            iid = self.iid_of.get(replica_id)
            if e.instance is not None and iid != e.instance:
                log.warning("slocore router: request %s went to %s, not the policy's choice", key, replica_id)
            if not e.routed:
                self.routing_s.append(time.monotonic() - e.t_submit)
            e.routed = True

    def on_request_completed(self, replica_id: ReplicaID, internal_request_id: str) -> None:
        with self.lock:
            key = self.by_internal.get(internal_request_id)
            e = self.entries.get(key) if key is not None else None
            if e is not None and not e.tracked:
                self._finish(e)

    # --- SloHandle's events ---------------------------------------------------------------------
    def on_tokens(self, key: str, n: int) -> None:
        with self.lock:
            e = self.entries.get(key)
            if e is None or e.finished or e.instance is None:
                return
            now = self.now()
            for _ in range(int(n)):
                e.state.generated = e.state.generated + 1
                e.state.computed = e.state.request.prompt_len + e.state.generated - 1
                self.policy.on_token(e.rid, e.instance, int(e.state.generated), now)

    def on_stream_end(self, key: str) -> None:
        with self.lock:
            e = self.entries.get(key)
            if e is not None:
                if e.instance is None:  # never placed
                    self.policy.on_cancelled(e.rid, self.now())
                    self._forget(e)
                else:
                    self._finish(e)

    # --- bookkeeping -----------------------------------------------------------------------------
    def _finish(self, e: _Entry) -> None:
        if not e.finished and e.instance is not None:
            self.policy.on_finished(e.rid, e.instance, self.now())
        e.finished = True
        self._forget(e)

    def _forget(self, e: _Entry) -> None:
        e.finished = True
        if self.entries.get(e.key) is e:
            del self.entries[e.key]
        for i in e.internal_ids:
            self.by_internal.pop(i, None)
        if state.BY_KEY.get(e.key) is self:
            del state.BY_KEY[e.key]

    def describe(self) -> dict:
        with self.lock:
            return {
                "policy": self.policy.name(),
                "params": dict(self.policy.params()),
                "instances": len(self.iid_of),
                "open": len(self.entries),
                "decisions": self.decisions,
                "unscheduled": self.rejected,
                "routing_ms": _quantiles_ms(self.routing_s),
            }


def _quantiles_ms(xs) -> dict:
    """p50 / p99 / max in ms of the routing latencies (first routing attempt to sent)."""
    if not xs:
        return {}
    v = sorted(xs)
    return {q: round(1e3 * v[min(len(v) - 1, int(f * len(v)))], 2) for q, f in (("p50", 0.5), ("p99", 0.99))} | {
        "max": round(1e3 * v[-1], 2)
    }


def _s_role(role: str):
    from slocore.roles import core_role

    return core_role(role)
