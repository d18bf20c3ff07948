"""A pull policy that keeps asking to be polled and never places a request does not keep the
simulation alive: its wake-ups stop once nothing else has happened for stall_timeout_s, and
the request ends stalled (sim/simulator.cc, `last_progress_`)."""

import math

import slocore as s
from slocore import _core
from slocore.profiles import hardware_profile


class Hoarder(s.GlobalPolicy):
    """Takes every request, places none, and asks to be polled again 10 ms later."""

    def __init__(self):
        super().__init__()
        self.q, self.t, self.polls = [], 0.0, 0

    def name(self):
        return "hoarder"

    def submit(self, r, now, expected_handoff=math.nan):
        self.q.append(r.id)

    def poll(self, now, views):
        self.t, self.polls = now, self.polls + 1
        return []

    def next_wakeup(self):
        return self.t + 0.01

    def pending(self):
        return len(self.q)


def test_a_policy_that_never_places_ends_stalled_not_never():
    cfg = s.SimConfig()
    cfg.profile = hardware_profile("h100-llama2-7b")[0]
    cfg.instances = 1
    cfg.stall_timeout_s = 2.0
    cfg.max_time = math.inf
    cfg.global_policy = pol = Hoarder()
    cfg.batch_scheduler = lambda: s.make_batch_scheduler("sarathi_fcfs")
    reqs = [s.Request(0, 0.0, 100, output_len=5, ttft=1.0, tpot=0.1)]
    res = _core.simulate(reqs, cfg)
    assert res.stats["stalled"] == 1  # (before: the wake-ups counted as work and it never ended)
    assert 150 <= pol.polls <= 250  # woken every 10 ms for the 2 s of the stall window, then no more
