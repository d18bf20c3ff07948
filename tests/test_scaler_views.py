"""The simulator hands its scaler every instance's view at each tick (sim/simulator.cc,
decide_scale: the views are moved into one list and back, not copied): the scaler sees every
request the engines hold, and the engines run on afterwards as if nothing had happened."""

import slocore as s
from simkit import config, profile, requests
from slocore import _core


class CountingScaler(s.Scaler):
    """Never scales; at each tick compares the requests in the views with its own count."""

    def __init__(self):
        super().__init__()
        self.arrived = self.finished = 0
        self.seen = []

    def name(self):
        return "counting"

    def interval(self):
        return 0.05

    def on_arrival(self, request, now):
        self.arrived += 1

    def on_finished(self, request, now):
        self.finished += 1

    def decide(self, now, views):
        held = sum(len(v.running) + len(v.waiting) for v in views)
        self.seen.append((held, self.arrived - self.finished, sorted(v.id for v in views)))
        return []


def test_the_scaler_sees_every_request_the_engines_hold():
    scaler = CountingScaler()
    cfg = config(prof=profile(kv_blocks=300), instances=3, policy="round_robin", scaler=scaler)
    res = _core.simulate(requests(n=300, rate=60.0), cfg)
    assert all(r.outcome == s.Outcome.FINISHED for r in res.recorder.records()) and res.stats["stalled"] == 0
    assert len(scaler.seen) > 10
    assert all(held == expected and ids == [0, 1, 2] for held, expected, ids in scaler.seen), scaler.seen
    assert max(held for held, _, _ in scaler.seen) > 10  # queues built up while it looked
