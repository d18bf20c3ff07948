"""The router's Prometheus metrics. Per-request numbers (TTFT, TPOT, SLO met) come from
``slocore.request_metrics`` over the router's ``slocore.Recorder``: the one definition
(csrc/slocore/core/metrics.h) the simulator and the load generator (``slocore bench serve``,
``slocore.summarize``) use too. Attainment counts what the load generator counts: every
request the service took (met / missed / failed / shed / rate-limited) in the denominator,
and only requests the engine itself refused as invalid (HTTP 4xx, ``engine_rejected``)
apart, as the load generator leaves its 4xx answers out."""

from __future__ import annotations

import collections
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

disable_created_metrics()

LAT_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.75,
    1,
    1.5,
    2,
    3,
    5,
    10,
    20,
    60,
)
TPOT_BUCKETS = (0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1)
DEC_BUCKETS = (1e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 1e-2)
ENGINE_REJECTED = "engine_rejected"  # the engine's own 4xx: outside attainment


class RouterMetrics:
    def __init__(self, window_s: float = 60.0):
        self.window_s = float(window_s)
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "slocore_requests",
            "Requests by SLO class and outcome (slo_met, slo_missed, failed, shed, rate_limited; "
            "engine_rejected: the engine's own 4xx, outside attainment)",
            ["slo_class", "outcome"],
            registry=r,
        )
        self.attainment = Gauge(
            "slocore_slo_attainment",
            "Cumulative since start: slo_met / requests of the class, engine_rejected left out "
            "(slocore.request_metrics, as slocore bench serve computes it)",
            ["slo_class"],
            registry=r,
        )
        self.attainment_window = Gauge(
            "slocore_slo_attainment_window",
            "Like slocore_slo_attainment over the requests that ended in the last window_s seconds "
            "(absent for a class with none)",
            ["slo_class"],
            registry=r,
        )
        self.window_requests = Gauge(
            "slocore_slo_window_requests",
            "Requests of the class in the attainment window (the windowed gauge's denominator)",
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
            buckets=TPOT_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            "slocore_e2e_seconds", "End-to-end latency", ["slo_class"], buckets=LAT_BUCKETS, registry=r
        )
        self.backend_requests = Counter(
            "slocore_backend_requests",
            "Requests answered by each engine (the attempt that reached the client) by outcome",
            ["backend", "outcome"],
            registry=r,
        )
        self.backend_ttft = Histogram(
            "slocore_backend_ttft_seconds",
            "Time to first token of requests each engine answered",
            ["backend"],
            buckets=LAT_BUCKETS,
            registry=r,
        )
        self.backend_tpot = Histogram(
            "slocore_backend_tpot_seconds",
            "Time per output token of requests each engine answered",
            ["backend"],
            buckets=TPOT_BUCKETS,
            registry=r,
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
        self.policy_info = Gauge(
            "slocore_policy_info",
            "1 for each role's global policy (name or module:Class)",
            ["role", "policy"],
            registry=r,
        )
        self.decisions = Counter("slocore_decisions", "Policy assignments", ["role", "policy"], registry=r)
        self.decision_rate = Gauge(
            "slocore_decisions_per_second", "Assignments per second over the last 10 s", registry=r
        )
        self.decision_latency = Histogram(
            "slocore_decision_latency_seconds",
            "Time in policy submit+poll per decision",
            ["role", "policy"],
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
        self._finish_kids: dict = {}  # (class, backend, met) -> the children finished() updates
        self._decision_kids: dict = {}  # (role, policy) -> decision()'s counter and histogram children
        self._met = collections.Counter()
        self._fin = collections.Counter()
        self._win: collections.deque = collections.deque()  # (end time, class, met) in the window
        self._win_met = collections.Counter()
        self._win_fin = collections.Counter()
        self._dec_times: collections.deque = collections.deque(maxlen=100000)

    def child(self, metric, *labels):
        """metric.labels(*labels), cached (labels() costs ~10 us a call)."""
        key = (id(metric), labels)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = metric.labels(*labels)
        return c

    def policy(self, role: str, name: str) -> None:
        self.child(self.policy_info, role, name).set(1)

    def decision(self, role: str, policy: str, seconds: float, n: int = 1):
        key = (role, policy)
        kids = self._decision_kids.get(key)
        if kids is None:
            kids = self._decision_kids[key] = (
                self.child(self.decisions, role, policy),
                self.child(self.decision_latency, role, policy),
            )
        kids[0].inc(n)
        kids[1].observe(seconds)
        now = time.monotonic()
        if n == 1:
            self._dec_times.append(now)
        else:
            self._dec_times.extend([now] * n)

    def _count(self, cls: str, met: bool, outcome: str) -> None:
        """One request of `cls` into the cumulative and windowed attainment."""
        self._count_in(cls, met, self.child(self.requests, cls, outcome), self.child(self.attainment, cls))

    def _count_in(self, cls: str, met: bool, requests, attainment) -> None:
        """``_count`` given the class's requests-counter child and attainment-gauge child."""
        fin = self._fin[cls] = self._fin[cls] + 1
        mt = self._met[cls] = self._met[cls] + met
        requests.inc()
        attainment.set(mt / fin)
        now = time.monotonic()
        self._win.append((now, cls, met))
        self._win_fin[cls] += 1
        self._win_met[cls] += met
        if len(self._win) & 255 == 0:
            self._trim(now)

    def _trim(self, now: float) -> None:
        w, cut = self._win, now - self.window_s
        while w and w[0][0] < cut:
            _, cls, met = w.popleft()
            self._win_fin[cls] -= 1
            self._win_met[cls] -= met

    def finished(self, cls: str, m, backend: str | None = None) -> None:
        """m: slocore.RequestMetrics of a finished request; `backend`: the engine that answered."""
        met = bool(m.slo_met)
        outcome = "slo_met" if met else "slo_missed"
        # one lookup for the children this request updates (each child() is a tuple key + dict get)
        key = (cls, backend, met)
        kids = self._finish_kids.get(key)
        if kids is None:
            b = backend is not None
            kids = self._finish_kids[key] = (
                self.child(self.requests, cls, outcome),
                self.child(self.attainment, cls),
                self.child(self.ttft, cls),
                self.child(self.tpot, cls),
                self.child(self.e2e, cls),
                self.child(self.backend_requests, backend, outcome) if b else None,
                self.child(self.backend_ttft, backend) if b else None,
                self.child(self.backend_tpot, backend) if b else None,
            )
        req, att, ttft, tpot, e2e, b_req, b_ttft, b_tpot = kids
        self._count_in(cls, met, req, att)
        has_ttft, has_tpot = m.ttft == m.ttft, m.tpot == m.tpot and m.tokens > 1
        if has_ttft:
            ttft.observe(m.ttft)
        if has_tpot:
            tpot.observe(m.tpot)
        if m.e2e == m.e2e:
            e2e.observe(m.e2e)
        if b_req is not None:
            b_req.inc()
            if has_ttft:
                b_ttft.observe(m.ttft)
            if has_tpot:
                b_tpot.observe(m.tpot)

    def failed(self, cls: str, outcome: str = "failed") -> None:
        """A request that ended without an answer: an SLO miss (failed, shed, rate_limited)."""
        self._count(cls, False, outcome)

    def engine_rejected(self, cls: str, backend: str | None = None) -> None:
        """The engine refused the request as invalid (4xx): counted apart, not in attainment."""
        self.child(self.requests, cls, ENGINE_REJECTED).inc()
        if backend is not None:
            self.child(self.backend_requests, backend, ENGINE_REJECTED).inc()

    def render(self, pending: int, backends) -> bytes:
        now = time.monotonic()
        while self._dec_times and self._dec_times[0] < now - 10:
            self._dec_times.popleft()
        self.decision_rate.set(len(self._dec_times) / 10.0)
        self._trim(now)
        for cls in list(self._win_fin):
            n = self._win_fin[cls]
            self.child(self.window_requests, cls).set(n)
            if n > 0:
                self.child(self.attainment_window, cls).set(self._win_met[cls] / n)
            else:  # nothing ended in the window: no value rather than a stale one
                if self._children.pop((id(self.attainment_window), (cls,)), None) is not None:
                    self.attainment_window.remove(cls)
                del self._win_fin[cls], self._win_met[cls]
        self.queue.labels("policy", "").set(pending)
        for b in backends:
            own_wait = sum(1 for s in b.inflight.values() if s.generated == 0)
            self.queue.labels("backend_running", b.name).set(b.polled.get("running", len(b.inflight) - own_wait))
            self.queue.labels("backend_waiting", b.name).set(b.polled.get("waiting", own_wait))
            self.kv.labels(b.name).set(float(b.polled.get("kv_usage", 0.0)))
            self.healthy.labels(b.name).set(1 if b.healthy else 0)
        return generate_latest(self.registry)
