"""`slo_predict` keeps each instance's prediction queue while the view's epoch holds
(stack/slo_predict.h PendingQueue): its choices equal the rescan's (epoch 0) over evolving
views: appends to `waiting`, several placements per poll, iterations that renew the epoch,
a changed online correction, ties and priority-only requests (infinite deadlines)."""

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from test_slo_predict import clusters

EPOCHS = itertools.count(1 << 40)  # far from the simulator's stamps


def _request(rid, now, prompt, ttft, tpot, prio):
    return s.Request(rid, now, prompt, output_len=8, ttft=ttft, tpot=tpot, priority=prio)


def _poll(pol, views_, now, tracked):
    saved = [v.epoch for v in views_]
    if not tracked:
        for v in views_:
            v.epoch = 0
    got = [(a.request, a.instance) for a in pol.poll(now, views_)]
    for v, e in zip(views_, saved):
        v.epoch = e
    return got


def _iterate(v, draw):
    """One engine iteration's worth of change: admit the head of `waiting`, advance a prefill."""
    running, waiting = list(v.running), list(v.waiting)
    if waiting and draw(st.booleans()):
        running.append(waiting.pop(0))
    if running:
        k = draw(st.integers(0, len(running) - 1))
        x = running[k]
        left = x.request.prompt_len - x.computed
        if left > 0:
            running[k] = s.RequestState(x.request, x.computed + draw(st.integers(1, left)), x.generated)
    v.running, v.waiting = running, waiting
    v.epoch = next(EPOCHS)


@settings(max_examples=80, deadline=None)
@given(clusters(), st.sampled_from(["deadline", "fifo"]), st.booleans(), st.data())
def test_kept_queue_chooses_as_the_rescan(views_, order, prefill_role, data):
    for v in views_:
        v.epoch = next(EPOCHS)
        if prefill_role:
            v.role = s.Role.PREFILL
    tracked = _core.make_global_policy("slo_predict", {"order": order})
    rescan = _core.make_global_policy("slo_predict", {"order": order})
    by_id = {v.id: v for v in views_}
    rid, now = itertools.count(10**6), data.draw(st.floats(0, 5))
    for _ in range(data.draw(st.integers(1, 8))):
        reqs = []
        for _ in range(data.draw(st.integers(0, 5))):
            ttft = data.draw(st.sampled_from([0.2, 0.5, 1.0, 3.0, math.inf]))
            tpot = math.inf if ttft == math.inf else data.draw(st.sampled_from([0.02, 0.1, math.inf]))
            prompt = data.draw(st.integers(1, 3000))
            reqs.append(_request(next(rid), now, prompt, ttft, tpot, data.draw(st.integers(0, 2))))
        for r in reqs:
            tracked.submit(r, now)
            rescan.submit(r, now)
        got = _poll(tracked, views_, now, True)
        assert got == _poll(rescan, views_, now, False)
        placed = {r.id: r for r in reqs}
        for req_id, inst in got:  # the engine admits them: appended, the epoch holds
            v = by_id[inst]
            v.waiting = [*v.waiting, s.RequestState(placed[req_id], 0, 0)]
        change = data.draw(st.sampled_from(["none", "none", "iterate", "correction"]))
        for v in views_:
            if change == "iterate" and data.draw(st.booleans()):
                _iterate(v, data.draw)
            elif change == "correction" and data.draw(st.booleans()):
                m = v.model
                m.set_correction(data.draw(st.sampled_from([0.8, 1.0, 1.25])))
                v.model = m
        now += data.draw(st.floats(0, 0.5))
