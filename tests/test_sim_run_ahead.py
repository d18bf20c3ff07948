"""Engines run ahead of the event loop once nothing but their own engine can change them (no
arrival to come, nothing pending in the global policy, no scaler, colocated, built-in
schedulers; sim/simulator.cc, "engines run ahead"). The run must be the one the event loop
makes step by step. A scheduler written in Python is never run ahead (it may share state
across engines), so the same built-in scheduler wrapped in Python gives the step-by-step run
to compare with: the same records, stats, timeline, and global-policy calls in the same
order with the same arguments."""

import math

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.sim import simulate, workloads


class Wrapped(s.BatchScheduler):
    """A built-in scheduler behind a Python one: the simulator steps its engine in event order."""

    def __init__(self, name, params):
        super().__init__()
        self.inner = _core.make_batch_scheduler(name, params)

    def name(self):
        return "wrapped_" + self.inner.name()

    def schedule(self, v, now):
        return self.inner.schedule(v, now)

    def on_batch_done(self, v, plan, predicted_s, actual_s, now):
        self.inner.on_batch_done(v, plan, predicted_s, actual_s, now)

    def on_finished(self, request, now):
        self.inner.on_finished(request, now)


class Logged(s.GlobalPolicy):
    """least_outstanding, with every call the simulator makes written down."""

    def __init__(self):
        super().__init__()
        self.inner = _core.make_global_policy("least_outstanding")
        self.log = []

    def name(self):
        return "logged"

    def submit(self, r, now, expected_handoff=math.nan):
        self.log.append(("submit", r.id, now))
        self.inner.submit(r, now, expected_handoff)

    def poll(self, now, views):
        out = self.inner.poll(now, views)
        self.log.append(("poll", now, [(a.request, a.instance) for a in out]))
        return out

    def pending(self):
        return self.inner.pending()

    def on_token(self, request, instance, generated, now):
        self.log.append(("token", request, instance, generated, now))
        self.inner.on_token(request, instance, generated, now)

    def on_finished(self, request, instance, now):
        self.log.append(("finished", request, instance, now))
        self.inner.on_finished(request, instance, now)

    def on_instance_added(self, instance, role, now):
        self.log.append(("added", instance, now))
        self.inner.on_instance_added(instance, role, now)


def _run(w, scheduler, wrapped, **kw):
    policy = Logged()
    make = (lambda: Wrapped(*scheduler)) if wrapped else scheduler
    res = simulate(w, global_policy=policy, batch_scheduler=make, **kw)
    return res, policy.log


def _records(res):
    return [
        (r.request.id, r.instance, str(r.outcome), r.end_time, np.asarray(r.token_times).tobytes())
        for r in res.recorder.records()
    ]


def _timeline(res):
    return [(p.t, p.colocated, p.starting, p.queued, p.waiting, p.running) for p in res.timeline]


# name: (workload, scheduler, simulate() keywords, the share of iterations that must run ahead)
CASES = {
    # EDF's preemption storm in a burst, with noisy iteration times (each engine's own RNG)
    "burst_edf_noise": (
        lambda: workloads.sharegpt_like(rate=2000.0, n=2000, seed=3),
        ("edf", {"token_budget": 512}),
        dict(instances=2, profile="h100-llama2-7b", noise_sigma=0.2),
        0.5,
    ),
    # prefix caching (cache hits, shared blocks) and online refits of the belief; calls arrive
    # until the end, so only the tail runs ahead
    "agentic_cache": (
        lambda: workloads.agentic(rate=2.0, tasks=40, seed=1),
        ("sarathi_fcfs", {}),
        dict(instances=3, profile="h100-llama2-7b", online_fit=True),
        0.005,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_running_ahead_gives_the_step_by_step_run(case):
    make, scheduler, kw, share = CASES[case]
    ahead, ahead_log = _run(make(), scheduler, False, **kw)
    step, step_log = _run(make(), scheduler, True, **kw)
    assert step.stats["steps_ahead"] == 0
    assert ahead.stats["steps_ahead"] > share * ahead.stats["iterations"]
    assert {k: v for k, v in ahead.stats.items() if k != "steps_ahead"} == {
        k: v for k, v in step.stats.items() if k != "steps_ahead"
    }
    assert _records(ahead) == _records(step)
    assert _timeline(ahead) == _timeline(step)
    assert len(ahead_log) == len(step_log) and ahead_log == step_log


def test_a_cut_run_ends_where_the_event_loop_stops():
    """max_time falls while engines run ahead: nothing past it is recorded or counted."""
    make, scheduler, kw, _ = CASES["burst_edf_noise"]
    full, _ = _run(make(), scheduler, False, **kw)
    half = full.stats["end_time"] / 2
    cut, cut_log = _run(make(), scheduler, False, **dict(kw, max_time=half))
    step, step_log = _run(make(), scheduler, True, **dict(kw, max_time=half))
    assert 0 < cut.stats["steps_ahead"] and cut.stats["iterations"] < full.stats["iterations"]
    assert all(t <= half for r in cut.recorder.records() for t in r.token_times)
    assert any(r.outcome.name == "REJECTED" for r in cut.recorder.records())
    assert _records(cut) == _records(step) and cut_log == step_log
    assert cut.stats["iterations"] == step.stats["iterations"]
    assert cut.stats["preemptions"] == step.stats["preemptions"]  # the engines stopped where the loop did
