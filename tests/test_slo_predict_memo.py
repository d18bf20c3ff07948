"""`slo_predict` keeps each instance's prediction queue while the view's epoch holds
(stack/slo_predict.h PendingQueue): over evolving views (appends to `waiting`, placements
within a poll, new polls, iterations that renew the epoch, a changed online correction,
equal and infinite deadlines) every field of its prediction is bit-identical to the
rescan's, and the policy's choices equal those on untracked views (epoch 0)."""

import itertools
import math

import pytest
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


FIELDS = ("ttft", "tpot", "loss", "slack", "finish", "cached", "saved", "outstanding")
DEADLINES = [0.2, 0.5, 1.0, 3.0, math.inf]


def _bits(x):
    return float(x).hex() if isinstance(x, float) else x


@settings(max_examples=60, deadline=None)
@given(clusters(), st.booleans(), st.booleans(), st.data())
def test_kept_queue_predicts_as_the_rescan(views_, fifo, prefill_role, data):
    queues, extras = {}, {}
    for v in views_:
        v.epoch = next(EPOCHS)
        if prefill_role:
            v.role = s.Role.PREFILL
        queues[v.id], extras[v.id] = _core.SloPendingQueue(), []
    rid, poll, now = itertools.count(10**6), 1, data.draw(st.floats(0, 5))
    for _ in range(data.draw(st.integers(1, 10))):
        v = views_[data.draw(st.integers(0, len(views_) - 1))]
        action = data.draw(st.sampled_from(["append", "append", "extra", "extra", "poll", "iterate", "correction"]))
        if action == "append":  # the engine admits a request: the epoch holds
            r = _request(
                next(rid), now, data.draw(st.integers(1, 3000)), data.draw(st.sampled_from(DEADLINES)), 0.05, 0
            )
            v.waiting = [*v.waiting, s.RequestState(r, 0, 0)]
        elif action == "extra":  # this poll placed one more request on v
            deadline = now + data.draw(st.sampled_from(DEADLINES))
            tokens = data.draw(st.integers(1, 3000))
            extras[v.id].append((deadline, tokens, data.draw(st.floats(0, 0.5)), data.draw(st.integers(1, 4000))))
        elif action == "poll":
            poll += 1
            for x in extras.values():
                x.clear()
        elif action == "iterate":
            _iterate(v, data.draw)
        else:
            m = v.model
            m.set_correction(data.draw(st.sampled_from([0.8, 1.0, 1.25])))
            v.model = m
        now += data.draw(st.floats(0, 0.2))
        for w in views_:
            for _ in range(2):
                ttft = data.draw(st.sampled_from(DEADLINES))
                tpot = data.draw(st.sampled_from([0.01, 0.1, math.inf]))
                prompt = data.draw(st.integers(1, 3000))
                r = _request(next(rid), now, prompt, ttft, tpot, 0)
                cached = data.draw(st.integers(0, prompt))
                q = queues[w.id]
                assert q.sync(fifo, w, extras[w.id], poll)
                got = q.predict(w, r, cached, now)
                want = _core.slo_predict_rescan(fifo, w, r, cached, now, extras[w.id])
                assert [_bits(getattr(got, f)) for f in FIELDS] == [_bits(getattr(want, f)) for f in FIELDS]


@settings(max_examples=60, deadline=None)
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


def _small_kv(blocks):
    import copy

    from slocore import profiles

    p = copy.deepcopy(profiles.load_profile("h100-llama2-7b"))
    p["kv"]["num_blocks"] = blocks  # preemptions: requests go back to the front of `waiting`
    return p


def _simulate_both(workload, **kw):
    """The run with kept queues checked at every decision against the rescan, and the rescan's run."""
    from slocore.sim import simulate

    runs = []
    for memo in ("check", "rescan"):
        kw2 = dict(kw)
        for key in ("global_policy", "prefill_policy", "decode_policy"):
            if kw2.get(key) == "slo_predict":
                kw2[key] = ("slo_predict", {"queue_memo": memo})
        runs.append(simulate(workload, seed=0, **kw2))
    return runs


def _records(res):
    return [(r.request.id, r.instance, str(r.outcome), r.end_time, list(r.token_times)) for r in res.recorder.records()]


@pytest.mark.parametrize("case", ["edf_preempting", "pd", "prefix_chat"])
def test_followed_queues_choose_as_the_rescan_in_the_simulator(case):
    """In the simulator each kept queue follows its engine's waiting log across iterations
    (admissions, preemptions back to the front, prefix-cache refreshes that start a new stream,
    new models from the online correction of a belief 30% off): every prediction is
    bit-identical to the rescan's (queue_memo="check" raises otherwise), and every request's
    instance and token times equal those of the run that reads every view whole at each
    decision (queue_memo="rescan")."""
    from slocore.sim import workloads

    if case == "prefix_chat":
        w = workloads.multi_turn_chat(rate=40.0, sessions=120, seed=0)
        kw = dict(profile=_small_kv(300), instances=3, global_policy="slo_predict", batch_scheduler="edf")
    else:
        w = workloads.sharegpt_like(rate=800.0, n=800, seed=0)
        kw = dict(profile=_small_kv(600), batch_scheduler="edf" if case == "edf_preempting" else "sarathi_fcfs")
        if case == "pd":
            kw.update(mode="pd", prefill_instances=2, decode_instances=2)
            kw.update(prefill_policy="slo_predict", decode_policy="slo_predict")
        else:
            kw.update(instances=3, global_policy="slo_predict")
    kept, rescan = _simulate_both(w, belief_scale=1.3, **kw)
    assert kept.stats["preemptions"] > 0  # queues changed at the front, not only by appends
    if case == "prefix_chat":
        assert kept.stats["prefix_hit_tokens"] > 0
    assert _records(kept) == _records(rescan)
    assert kept.summary == rescan.summary
