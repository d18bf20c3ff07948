"""The router's Prometheus metrics. Per-request numbers (TTFT, TPOT, SLO met) come from
``slocore.request_metrics`` over the router's ``slocore.Recorder``: the one definition the
simulator and the load generator use too."""

from __future__ import annotations

import collections
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

disable_created_metrics()

LAT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 60)
DEC_BUCKETS = (1e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 1e-2)


class RouterMetrics:
    def __init__(self):
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "slocore_requests",
            "Finished requests by SLO class and outcome (slo_met, slo_missed, failed, rejected)",
            ["slo_class", "outcome"],
            registry=r,
        )
        self.attainment = Gauge(
            "slocore_slo_attainment",
            "Fraction of finished requests of the class that met both TTFT and TPOT SLOs",
            ["slo_class"],
            registry=r,
        )
        self.ttft = Histogram(
            "slocore_ttft_seconds",
            "Time to first token seen by the router",
            ["slo_class"],
            buckets=LAT_BUCKETS,
            registry=r,
        )
        self.tpot = Histogram(
            "slocore_tpot_seconds",
            "Time per output token (mean over decode tokens)",
            ["slo_class"],
            buckets=LAT_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            "slocore_e2e_seconds", "End-to-end latency", ["slo_class"], buckets=LAT_BUCKETS, registry=r
        )
        self.queue = Gauge(
            "slocore_queue_size",
            "Requests waiting: policy = submitted not yet assigned; backend_running/backend_waiting per engine",
            ["queue", "backend"],
            registry=r,
        )
        self.kv = Gauge(
            "slocore_backend_kv_usage", "Engine KV-cache usage (0-1) from its /metrics", ["backend"], registry=r
        )
        self.healthy = Gauge("slocore_backend_healthy", "1 when the engine answers /metrics", ["backend"], registry=r)
        self.decisions = Counter("slocore_decisions", "Policy assignments", ["policy"], registry=r)
        self.decision_rate = Gauge(
            "slocore_decisions_per_second", "Assignments per second over the last 10 s", registry=r
        )
        self.decision_latency = Histogram(
            "slocore_decision_latency_seconds",
            "Time in policy submit+poll per decision",
            ["policy"],
            buckets=DEC_BUCKETS,
            registry=r,
        )
        self.retries = Counter("slocore_retries", "Requests re-sent to another engine after a failure", registry=r)
        self.stale_retries = Counter(
            "slocore_stale_connection_retries",
            "Requests re-sent on a fresh connection "
            "because the engine had closed the pooled one (not an engine failure)",
            registry=r,
        )
        self.backend_errors = Counter(
            "slocore_backend_errors", "Engine failures seen by the router", ["backend", "kind"], registry=r
        )
        self._children: dict = {}
        self._met = collections.Counter()
        self._fin = collections.Counter()
        self._dec_times: collections.deque = collections.deque(maxlen=100000)

    def child(self, metric, *labels):
        """metric.labels(*labels), cached (labels() costs ~10 us a call)."""
        key = (id(metric), labels)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = metric.labels(*labels)
        return c

    def decision(self, policy: str, seconds: float, n: int = 1):
        self.child(self.decisions, policy).inc(n)
        self.child(self.decision_latency, policy).observe(seconds)
        now = time.monotonic()
        for _ in range(n):
            self._dec_times.append(now)

    def finished(self, cls: str, m) -> None:
        """m: slocore.RequestMetrics of a finished request."""
        self._fin[cls] += 1
        if m.slo_met:
            self._met[cls] += 1
        self.child(self.requests, cls, "slo_met" if m.slo_met else "slo_missed").inc()
        self.child(self.attainment, cls).set(self._met[cls] / self._fin[cls])
        if m.ttft == m.ttft:
            self.child(self.ttft, cls).observe(m.ttft)
        if m.tpot == m.tpot and m.tokens > 1:
            self.child(self.tpot, cls).observe(m.tpot)
        if m.e2e == m.e2e:
            self.child(self.e2e, cls).observe(m.e2e)

    def failed(self, cls: str, outcome: str = "failed") -> None:
        self._fin[cls] += 1
        self.requests.labels(cls, outcome).inc()
        self.attainment.labels(cls).set(self._met[cls] / self._fin[cls])

    def render(self, pending: int, backends) -> bytes:
        now = time.monotonic()
        while self._dec_times and self._dec_times[0] < now - 10:
            self._dec_times.popleft()
        self.decision_rate.set(len(self._dec_times) / 10.0)
        self.queue.labels("policy", "").set(pending)
        for b in backends:
            own_wait = sum(1 for s in b.inflight.values() if s.generated == 0)
            self.queue.labels("backend_running", b.name).set(b.polled.get("running", len(b.inflight) - own_wait))
            self.queue.labels("backend_waiting", b.name).set(b.polled.get("waiting", own_wait))
            self.kv.labels(b.name).set(float(b.polled.get("kv_usage", 0.0)))
            self.healthy.labels(b.name).set(1 if b.healthy else 0)
        return generate_latest(self.registry)
