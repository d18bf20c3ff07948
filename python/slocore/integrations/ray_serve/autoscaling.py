"""The HFX scaler (or any slocore scaler) as a Ray Serve custom autoscaling policy.

``SloAutoscalingPolicy`` is a class-callable policy (``AutoscalingPolicy(policy_function=
SloAutoscalingPolicy, policy_kwargs=...)``; Ray builds it once in the Serve controller and
calls it every control-loop tick with an ``AutoscalingContext``). Each tick it:

1. reads every replica's autoscaling stats (``SloReplicaStats.record_autoscaling_stats``:
   the engine's running / waiting requests and KV usage, and counters of arrivals, first
   tokens and completions with the arrivals' TTFT SLO sum);
2. turns counter increments into the scaler's events (``on_arrival`` / ``on_first_token`` /
   ``on_finished``, HFX Alg. 3's inputs), dated at the tick: a replica reports every
   ``metrics_interval_s``, so event times are quantised to that (the live router,
   ``slocore serve``, dates them exactly);
3. builds the replicas' views with ``slocore.serve.backends.build_view`` (as ``slocore
   serve``) and calls ``scaler.decide`` every ``scaler.interval()``;
4. applies the decisions to the replica count: scale-out +1, scale-in -1 (Ray picks the
   replica and drains it: its in-flight requests finish first), within the deployment's
   ``min_replicas`` / ``max_replicas``. A role switch does not apply (a P/D pair is two
   deployments, each with its own policy and ``pool``) and is counted as ignored.

It exports the scaler's desired replica count and HFX indicators through
``ray.util.metrics`` (Ray's metrics agent serves them to Prometheus with Ray's ``ray_``
prefix): ``slocore_scaler_desired_instances{pool,deployment}``,
``slocore_scaler_indicator{pool,name,deployment}``. ``last`` keeps the latest tick's
figures (tests, logs).

Policy kwargs: ``scaler`` (name or ``module:Class``, default ``hfx``), ``params``, ``pool``
(colocated | prefill | decode), ``profile`` (the views' latency model), ``clock_scale``
(scaler seconds per real second, the emulated engine's ``1/time_scale``).
"""

from __future__ import annotations

import collections
import itertools
import logging
import time

import slocore as _s
from slocore.roles import ROLES
from slocore.serve.backends import build_view
from slocore.serve.scaler import ACTIONS, make_scaler, scaler_indicators

log = logging.getLogger("slocore.ray_serve")

COUNTERS = ("arrivals", "first_tokens", "finished", "ttft_sum")
SYNTHETIC_BASE = 1 << 40  # ids of the scaler's events (one per counted request)


def _latest(series) -> float | None:
    if series is None:
        return None
    if isinstance(series, (int, float)):
        return float(series)
    try:
        return float(series[-1].value)
    except (IndexError, AttributeError, TypeError):
        return None


class SloAutoscalingPolicy:
    def __init__(
        self,
        scaler: str = "hfx",
        params: dict | None = None,
        pool: str = "colocated",
        profile: str = "h100-llama2-7b",
        clock_scale: float = 1.0,
    ):
        if pool not in ROLES:
            raise ValueError(f"policy_kwargs.pool: one of {', '.join(ROLES)}, got {pool!r}")
        if not (isinstance(clock_scale, (int, float)) and clock_scale > 0):
            raise ValueError(f"policy_kwargs.clock_scale: must be > 0, got {clock_scale!r}")
        from slocore.profiles import hardware_profile

        self.scaler = make_scaler(scaler, dict(params or {}))
        self.pool = pool
        hw, _ = hardware_profile(profile)
        self.model = _s.LatencyModel(hw.coeffs)
        self.kv_blocks, self.block_size = int(hw.kv_blocks), int(hw.block_size)
        self.clock_scale = float(clock_scale)
        self.t0 = time.monotonic()
        self.t_next = 0.0
        self.ids = itertools.count(SYNTHETIC_BASE)
        self.iids = itertools.count()
        self.iid_of: dict = {}  # ReplicaID -> instance id
        self.seen: dict = {}  # ReplicaID -> last counters
        self.waiting: dict = collections.defaultdict(collections.deque)  # replica -> ids without a first token
        self.open: dict = collections.defaultdict(collections.deque)  # replica -> ids not finished
        self.desired: int | None = None
        self.last: dict = {}
        self.ignored = collections.Counter()
        self._gauges = None

    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.clock_scale

    # --- events from counters -----------------------------------------------------------
    def _events(self, rep, stats: dict, now: float) -> None:
        prev = self.seen.get(rep, dict.fromkeys(COUNTERS, 0.0))
        if any(stats.get(k, 0.0) < prev.get(k, 0.0) for k in COUNTERS[:3]):  # counters restarted
            prev = dict.fromkeys(COUNTERS, 0.0)
        n_new = int(stats.get("arrivals", 0) - prev["arrivals"])
        if n_new > 0:
            ttft = (stats.get("ttft_sum", 0.0) - prev["ttft_sum"]) / n_new
            for _ in range(n_new):
                rid = next(self.ids)
                kw = {"ttft": ttft} if ttft > 0 else {}
                self.scaler.on_arrival(_s.Request(rid, now, 1, **kw), now)
                self.waiting[rep].append(rid)
                self.open[rep].append(rid)
        for _ in range(int(stats.get("first_tokens", 0) - prev["first_tokens"])):
            if self.waiting[rep]:
                self.scaler.on_first_token(self.waiting[rep].popleft(), now)
        for _ in range(int(stats.get("finished", 0) - prev["finished"])):
            if self.open[rep]:
                rid = self.open[rep].popleft()
                if rid in self.waiting[rep]:
                    self.waiting[rep].remove(rid)
                self.scaler.on_finished(rid, now)
        self.seen[rep] = {k: float(stats.get(k, 0.0)) for k in COUNTERS}

    def _gone(self, rep, now: float) -> None:
        for rid in self.open.pop(rep, ()):
            self.scaler.on_finished(rid, now)
        self.waiting.pop(rep, None)
        self.seen.pop(rep, None)
        self.iid_of.pop(rep, None)

    # --- the tick -------------------------------------------------------------------------
    def stats_of(self, ctx) -> dict:
        """{ReplicaID: {stat: latest value}} from the context's raw (else aggregated) metrics."""
        raw = ctx.raw_metrics or {}
        agg = ctx.aggregated_metrics or {}
        out: dict = {r: {} for r in ctx.running_replicas}
        for src in (agg, raw):  # raw last: the latest point wins
            for name, per in (src or {}).items():
                for rep, series in (per or {}).items():
                    v = _latest(series)
                    if v is not None and rep in out:
                        out[rep][name] = v
        return out

    def __call__(self, ctx) -> tuple:
        now = self.now()
        stats = self.stats_of(ctx)
        for rep in [r for r in self.iid_of if r not in stats]:
            self._gone(rep, now)
        views = []
        for rep, st in stats.items():
            if rep not in self.iid_of:
                self.iid_of[rep] = next(self.iids)
            self._events(rep, st, now)
            views.append(
                build_view(
                    self.iid_of[rep], self.pool, self.model, int(st.get("block_size", self.block_size)),
                    self.kv_blocks, (), st,
                )
            )  # fmt: skip
        current = int(ctx.target_num_replicas)
        lo, hi = int(ctx.capacity_adjusted_min_replicas), int(ctx.capacity_adjusted_max_replicas)
        if self.desired is None:
            self.desired = current
        if now >= self.t_next:  # decisions start from Ray's current target
            self.t_next = now + float(self.scaler.interval())
            decisions = self.scaler.decide(now, views)
            self.desired = self.apply(decisions, current, lo, hi)
            self.last = {
                "now": now,
                "replicas": len(stats),
                "desired": self.desired,
                "decisions": [ACTIONS[d.action.name] for d in decisions],
                "indicators": scaler_indicators(self.scaler, (self.pool,), now, views).get(self.pool, {}),
            }
            self._export(ctx)
        return self.desired, {}

    def apply(self, decisions, current: int, lo: int, hi: int) -> int:
        n = current
        for d in decisions:
            action = ACTIONS[d.action.name]
            if action == "scale_out":
                if n + 1 > hi:
                    self.ignored["cap"] += 1
                    continue
                n += 1
            elif action == "scale_in":
                if n - 1 < max(lo, 1):
                    self.ignored["floor"] += 1
                    continue
                n -= 1
            else:
                self.ignored["role"] += 1
        return n

    def _export(self, ctx) -> None:
        try:
            from ray.util.metrics import Gauge
        except ImportError:
            return
        try:
            if self._gauges is None:
                self._gauges = (
                    Gauge(
                        "slocore_scaler_desired_instances",
                        "Replicas the slocore scaler wants for the pool",
                        tag_keys=("pool", "deployment"),
                    ),
                    Gauge(
                        "slocore_scaler_indicator",
                        "The scaler's indicators of the pool at its last tick (HFX Alg. 3)",
                        tag_keys=("pool", "name", "deployment"),
                    ),
                )
            dep = str(getattr(ctx, "deployment_name", ""))
            self._gauges[0].set(float(self.desired), tags={"pool": self.pool, "deployment": dep})
            for k, v in self.last.get("indicators", {}).items():
                self._gauges[1].set(float(v), tags={"pool": self.pool, "name": k, "deployment": dep})
        except Exception as e:  # noqa: BLE001 - metrics must not stop scaling
            log.debug("slocore scaler metrics: %s", e)
