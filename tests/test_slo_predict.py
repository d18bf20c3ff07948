"""The slocore stack's dispatch (`slo_predict`, csrc/slocore/stack/slo_predict.h): C++ ==
reference on random views and request sequences, the prediction by hand, priority-only
requests, long prompts that a per-poll cap would starve, and the `slocore` presets."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from simkit import config, profile, requests
from slocore import _core
from slocore.reference import prefix as pref
from slocore.reference import slo_predict as ref
from slocore.sim import preset, presets, simulate, stacks, workloads
from test_batch_baselines import views

COEF = dict(t_c=0.01, a_p=2e-8, b_p=1e-9, c_p=1e-4, a_d=1e-6, b_d=2e-3)


def inst(i, running=(), waiting=(), busy=0.0, role=None, budget=2048, coef=COEF):
    v = s.InstanceView(i) if role is None else s.InstanceView(i, role)
    v.running, v.waiting = list(running), list(waiting)
    v.kv_blocks_total = v.kv_blocks_free = 100_000
    v.max_batch_tokens = budget
    v.busy_until = busy
    v.model = s.LatencyModel(s.LatencyCoeffs(**coef))
    return v


def req(rid, prompt, arrival=0.0, ttft=1.0, tpot=0.1, **kw):
    return s.Request(rid, arrival, prompt, output_len=10, ttft=ttft, tpot=tpot, **kw)


def route(policy, r, views, now=0.0):
    policy.submit(r, now)
    return {a.request: a.instance for a in policy.poll(now, views)}[r.id]


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 4))
    out = []
    for i in range(n):
        v = draw(views())
        v.id = i
        v.busy_until = draw(st.floats(0, 12))
        v.accepting = draw(st.booleans()) if i > 0 else True
        if draw(st.booleans()):
            c = v.model.coeffs
            v.model = s.LatencyModel(
                s.LatencyCoeffs(t_c=c.t_c, a_p=c.a_p, b_p=c.b_p, c_p=c.c_p * (1 + i), a_d=c.a_d, b_d=c.b_d * 2)
            )
        out.append(v)
    return out


@settings(max_examples=120, deadline=None)
@given(
    clusters(),
    st.sampled_from(["deadline", "fifo"]),
    st.booleans(),
    st.lists(
        st.tuples(st.integers(1, 9000), st.floats(0.05, 5.0), st.floats(0.005, 0.5), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    st.floats(0, 12),
)
def test_slo_predict_matches_reference(views_, order, prefill_role, reqs, now):
    if prefill_role:
        for v in views_:
            v.role = s.Role.PREFILL
    pol = _core.make_global_policy("slo_predict", {"order": order})
    r_ = ref.SloPredict(order=order)
    r_.new_poll()
    batch = []
    for k, (prompt, ttft, tpot, inf_tpot) in enumerate(reqs):  # all placed in one poll
        r = req(10**6 + k, prompt, arrival=now, ttft=ttft, tpot=math.inf if inf_tpot else tpot)
        pol.submit(r, now)
        batch.append(r)
    got = {a.request: a.instance for a in pol.poll(now, views_)}
    for r in batch:
        i = r_.choose(r, now, views_)
        assert views_[i].id == got[r.id]


def test_prediction_by_hand():
    # One decode over 100 cached tokens, a waiting 1000-token prefill due at 0.5 s, idle engine.
    dec = s.RequestState(req(1, 100), 100, 1)
    wait = s.RequestState(req(2, 1000, ttft=0.5), 0, 0)
    v = inst(0, running=[dec], waiting=[wait], budget=512)
    m = ref.Model(v.model)
    r = req(3, 300, ttft=2.0)
    p = ref.predict(v, r, 0, 0.0)
    per_iter = m.overhead() + m.decode(100)
    # r's deadline (2.0) is later than the waiting one's (0.5): 1300 tokens = 3 iterations ahead.
    assert p.finish == pytest.approx(m.prefill(1000, 0) + m.prefill(300, 0) + 3 * per_iter)
    assert p.loss == 0 and p.tpot == pytest.approx(m.overhead() + m.decode(100) + m.decode(1000) + m.decode(300))
    # A tighter request goes first and delays the waiting one past its deadline.
    tight = req(4, 6000, ttft=0.3)
    assert ref.predict(v, tight, 0, 0.0).loss == 2  # itself late and the waiting one made late
    assert ref.predict(v, tight, 0, 0.0, order="fifo").loss == 1  # behind it: only itself late
    # 5900 of its 6000 prompt tokens cached: only 100 prefilled.
    assert ref.predict(v, tight, 5900, 0.0).finish < ref.predict(v, tight, 0, 0.0).finish


def test_prefers_the_instance_it_makes_no_one_late_on():
    # Both instances give r the same predicted first token (it goes first by deadline), but on
    # instance 0 it pushes a queued request due at 0.22 s past its deadline: r goes to 1.
    due = s.RequestState(req(1, 200, ttft=0.22), 0, 0)
    v0, v1 = inst(0, waiting=[due]), inst(1)
    r = req(2, 1500, ttft=0.21)
    p0, p1 = ref.predict(v0, r, 0, 0.0), ref.predict(v1, r, 0, 0.0)
    assert p0.finish == p1.finish and (p0.loss, p1.loss) == (1, 0)
    assert route(_core.make_global_policy("slo_predict"), r, [v0, v1]) == 1
    # With no deadline at stake the earlier predicted first token wins: the idle instance.
    pol = _core.make_global_policy("slo_predict")
    assert route(pol, req(3, 4000, ttft=5.0), [inst(0), inst(1, busy=0.2)]) == 0


def test_one_poll_spreads_by_predicted_time_and_prefill_role_has_no_tpot():
    pol = _core.make_global_policy("slo_predict")
    vs = [inst(0, role=s.Role.PREFILL), inst(1, role=s.Role.PREFILL)]
    for k in range(4):
        pol.submit(req(k, 3000, ttft=2.0), 0.0)
    got = [a.instance for a in pol.poll(0.0, vs)]
    assert sorted(got) == [0, 0, 1, 1]
    assert ref.predict(vs[0], req(9, 100), 0, 0.0).tpot == 0.0


def test_bad_params_name_the_field():
    for bad, field in (({"order": "lifo"}, "order"), ({"spread": 2.0}, "spread"), ({"zz": 1}, "zz")):
        with pytest.raises(ValueError, match=field):
            _core.make_global_policy("slo_predict", bad)


def test_priority_only_requests_are_mapped_and_finish():
    reqs = requests(120, rate=30, prompt=(32, 400), output=(2, 40))
    for r in reqs:
        r.slo = s.Slo()  # no targets: the mapper plans with HFX Table 1 medians by priority
        r.priority = r.id % 3
    pol = _core.make_global_policy("slo_predict")
    res = _core.simulate(reqs, config(profile(), instances=2, policy=pol))
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)


def test_long_prompts_are_not_starved():
    # 4-16k-token prompts on 4 instances at a light load: every instance runs several at once
    # (HFX's per-poll cap let such a prompt go only to an idle instance).
    wl = workloads.rag(rate=1.0, n=40, seed=0)
    got = simulate(wl, seed=0, profile="h100-llama2-7b", instances=4, **preset("slocore"))
    rr = simulate(wl, seed=0, profile="h100-llama2-7b", instances=4, **preset("rr+sarathi_fcfs"))
    assert got.summary["finished"] == len(wl)
    assert got.summary["attainment"] >= rr.summary["attainment"] - 0.05


def test_slocore_presets_register_both_modes():
    ps = presets(kind="slocore")
    assert {"slocore", "slocore+scale", "slocore+strict_tpot"} <= set(ps)
    assert preset("slocore+strict_tpot", mode="pd")["batch_scheduler"] == ("slo_triage", {"strict_tpot": True})
    assert ps["slocore"].modes() == ("colocated", "pd") and "scaling" in ps["slocore+scale"].tags
    assert preset("slocore")["global_policy"] == "slo_predict"
    assert preset("slocore", mode="pd")["prefill_policy"] == "slo_predict"
    assert preset("slocore")["batch_scheduler"] == preset("slocore", mode="pd")["batch_scheduler"] == "slo_triage"


def test_predictions_within_the_margin_go_to_the_fewest_outstanding():
    # Instance 0 is predicted a little faster (its model quicker) but holds 3 decodes;
    # within the 20% margin the emptier instance 1 wins; with margin 0 the prediction decides.
    decs = [s.RequestState(req(k, 50), 50, 1) for k in range(3)]
    v0 = inst(0, running=decs, coef=dict(COEF, c_p=0.8e-4, t_c=0.009))
    v1 = inst(1)
    r = req(9, 2000, ttft=5.0, tpot=math.inf)  # TTFT only: the slack follows the first token
    p0, p1 = ref.predict(v0, r, 0, 0.0), ref.predict(v1, r, 0, 0.0)
    assert p0.finish < p1.finish <= p0.finish * 1.2
    assert route(_core.make_global_policy("slo_predict"), r, [v0, v1]) == 1
    assert route(_core.make_global_policy("slo_predict", {"margin": 0.0}), r, [v0, v1]) == 0


@pytest.mark.parametrize("mode", ["colocated", "pd"])
def test_slocore_presets_finish_runs(mode):
    wl = workloads.hfx_4task(rate=30.0, n_per_task=25, seed=1)
    cluster = dict(instances=2) if mode == "colocated" else dict(prefill_instances=1, decode_instances=1)
    for name in ("slocore", "slocore+scale", "slocore+strict_tpot"):
        kw = stacks.scaling_kwargs(preset(name, mode=mode), 2)
        res = simulate(wl, seed=1, profile="ascend910b-qwen7b", **cluster, **kw)
        assert res.summary["finished"] == len(wl), name


def test_within_the_margin_the_cached_prefix_saving_wins_before_fewest_outstanding():
    # Instance 0 holds 3 decodes and the first block (16 tokens) of r's prompt; instance 1 is
    # empty, holds nothing and is predicted the earlier first token. Both are within the 20%
    # margin: the prefill time the cache saves on 0 wins over 1's fewer outstanding requests.
    segs = [(7, 16), (8, 1984)]
    r = s.Request(9, 0.0, 2000, output_len=10, ttft=5.0, tpot=math.inf, prefix=segs)
    decs = [s.RequestState(req(k, 50), 50, 1) for k in range(3)]
    v0, v1 = inst(0, running=decs), inst(1)
    idx = _core.ApproxPrefixIndex(1024)
    idx.record(pref.prompt_block_hashes(2000, segs, v0.block_size)[:1])
    v0.prefix_index = idx
    p0, p1 = ref.predict(v0, r, 16, 0.0), ref.predict(v1, r, 0, 0.0)
    assert p1.saved == 0.0 < p0.saved and p0.outstanding > p1.outstanding
    assert p1.finish < p0.finish <= p1.finish * 1.2 and p0.loss == p1.loss == 0
    assert ref.better(p1, p0)  # without the margin 1 would win
    assert route(_core.make_global_policy("slo_predict"), r, [v0, v1]) == 0
    rr = ref.SloPredict()
    rr.new_poll()
    assert rr.choose(r, 0.0, [v0, v1]) == 0
    plain = s.Request(10, 0.0, 2000, output_len=10, ttft=5.0, tpot=math.inf)
    assert route(_core.make_global_policy("slo_predict"), plain, [inst(0, running=decs), inst(1)]) == 1


# `hold` (the slocore-router preset): the router keeps the queue for engines that serve in
# arrival order.


@settings(max_examples=120, deadline=None)
@given(
    clusters(),
    st.sampled_from(["deadline", "fifo"]),
    st.lists(
        st.tuples(st.integers(1, 9000), st.floats(0, 12), st.floats(0.05, 5.0), st.floats(0.005, 0.5)),
        min_size=1,
        max_size=8,
    ),
    st.floats(0, 12),
)
def test_held_queue_matches_reference(views_, order, reqs, now):
    pol = _core.make_global_policy("slo_predict", {"order": order, "hold": True})
    r_ = ref.Held(order=order)
    for k, (prompt, arrival, ttft, tpot) in enumerate(reqs):
        r = req(10**6 + k, prompt, arrival=min(arrival, now), ttft=ttft, tpot=tpot)
        pol.submit(r, now)
        r_.submit(r)
    for _ in range(2):  # the second poll: same views, this poll's placements forgotten
        got = [(a.request, a.instance) for a in pol.poll(now, views_)]
        assert got == r_.poll(now, views_)
    assert pol.pending() == len(r_.held) + len(r_.hopeless)


def shared_prefix(group: int, tokens: int, prompt: int) -> list:
    """A prompt's prefix identity: `tokens` shared with every prompt of `group`, the rest its own."""
    head = min(tokens, prompt)
    return [(100 + group, head)] + ([(10**6 + prompt, prompt - head)] if prompt > head else [])


@st.composite
def cache_cases(draw):
    """2-3 instances with 0-6000 tokens of queued prefill (about 0-3 iterations) and maybe the
    first blocks of group 0's or 1's prompts; 1-8 requests at 0, some sharing those prefixes."""
    views_ = []
    for i in range(draw(st.integers(2, 3))):
        queued = draw(st.integers(0, 6000))
        v = inst(i, waiting=[s.RequestState(req(i, queued), 0, 0)] if queued else [])
        if draw(st.booleans()):
            idx = _core.ApproxPrefixIndex(1024)
            segs = shared_prefix(draw(st.integers(0, 1)), 9000, 9000)
            idx.record(pref.prompt_block_hashes(9000, segs, v.block_size)[: draw(st.integers(0, 4000)) // 16])
            v.prefix_index = idx
        views_.append(v)
    reqs = []
    for _ in range(draw(st.integers(1, 8))):
        prompt = draw(st.integers(100, 5000))
        shared = draw(st.none() | st.tuples(st.integers(0, 1), st.integers(16, 5000)))
        prefix = shared_prefix(shared[0], shared[1], prompt) if shared else []
        reqs.append((prompt, draw(st.sampled_from([0.3, 0.6, 1.0, 2.0, 4.0])) * draw(st.floats(0.5, 1.5)), prefix))
    return views_, reqs


@settings(max_examples=200, deadline=None)
@given(cache_cases(), st.sampled_from(["deadline", "fifo"]), st.data())
def test_prefix_choices_match_reference(case, order, data):
    # Shared prefixes, cached ones and queues near one iteration: the slack a cached prefix may
    # use, the room it buys in the held queue, the requests that wait for their cache (reserved
    # there), and the blocks of unfinished placements, kept across polls and released when
    # their requests end.
    views_, specs = case

    def batch(first_id):
        return [req(first_id + k, p, ttft=t, tpot=math.inf, prefix=x) for k, (p, t, x) in enumerate(specs)]

    pol = _core.make_global_policy("slo_predict", {"order": order})
    r_ = ref.SloPredict(order=order)
    for rnd in range(2):  # the second round sees the first one's unfinished placements
        r_.new_poll()
        reqs = batch(10**6 * (rnd + 1))
        for r in reqs:
            pol.submit(r, 0.0)
        got = {a.request: a.instance for a in pol.poll(0.0, views_)}
        for r in reqs:
            assert views_[r_.choose(r, 0.0, views_)].id == got[r.id]
    held = _core.make_global_policy("slo_predict", {"order": order, "hold": True})
    h = ref.Held(order=order)
    for r in batch(10**6):
        held.submit(r, 0.0)
        h.submit(r)
    for _ in range(3):
        got = [(a.request, a.instance) for a in held.poll(0.0, views_)]
        assert got == h.poll(0.0, views_)
        for rid, iid in got:
            if data.draw(st.booleans()):
                held.on_finished(rid, iid, 0.0)
                h.sp.finished(rid)
    assert held.pending() == len(h.held) + len(h.hopeless)


def test_hold_waits_for_room_and_releases_by_deadline_hopeless_last():
    busy = [s.RequestState(req(1, 6000), 0, 0)]  # 6000 prefill tokens queued: three iterations
    v = inst(0, waiting=busy)
    assert ref.prefill_backlog(v, (), 0.0) > ref.iteration_time(v)
    pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
    loose, tight = req(10, 2048, arrival=1.0, ttft=5.0), req(11, 2048, arrival=1.0, ttft=0.5)
    late = req(12, 2048, ttft=0.2)  # its first token was due at 0.2
    for r in (loose, late, tight):
        pol.submit(r, 1.0)
    assert pol.poll(1.0, [v]) == [] and pol.pending() == 3  # no room: all wait in the router
    # An idle instance takes one 2048-token prompt (a full iteration) per poll: the earliest
    # on-time deadline first, then the next, and the late one after every on-time one.
    order = [[a.request for a in pol.poll(t, [inst(0)])] for t in (1.0, 1.01, 1.02)]
    assert order == [[11], [10], [12]] and pol.pending() == 0
    # Short prompts leave room for several in one poll, still by deadline.
    pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
    for r in (req(20, 100, ttft=3.0), req(21, 100, ttft=1.0), req(22, 100, ttft=2.0)):
        pol.submit(r, 0.0)
    assert [a.request for a in pol.poll(0.0, [inst(0), inst(1)])] == [21, 22, 20]


def test_router_preset_beats_a_placing_router_over_fcfs_engines():
    # Two SLO classes over FCFS engines past what they serve on time in arrival order: a router
    # that places every request at once leaves the tight class behind the loose one; the held
    # queue sends the tight class first.
    wl = workloads.hfx_4task(rate=90.0, n_per_task=150, seed=0)
    kw = dict(seed=0, profile="ascend910b-qwen7b", instances=2)
    held = simulate(wl, **kw, **preset("slocore-router"))
    placed = simulate(wl, **kw, **preset("least_outstanding+sarathi_fcfs"))
    assert held.summary["finished"] == placed.summary["finished"] == len(wl)
    assert held.summary["attainment"] >= placed.summary["attainment"] + 0.3  # 100% vs 54.8% at seed 0


def test_hold_counts_a_cached_prefix_as_room():
    # Both instances hold more than one 2048-token iteration of prefill (3000 and 2500
    # tokens): no room. Instance 0 also holds the first 1984 tokens of r's prompt, and the
    # prefill time that saves r exceeds 0's excess backlog: 0 has room for r. A request
    # without that prefix stays in the router.
    segs = [(7, 1984), (8, 16)]
    r = s.Request(9, 0.0, 2000, output_len=10, ttft=5.0, tpot=math.inf, prefix=segs)
    plain = s.Request(10, 0.0, 2000, output_len=10, ttft=5.0, tpot=math.inf)

    def views_():
        v0 = inst(0, waiting=[s.RequestState(req(1, 3000), 0, 0)])
        idx = _core.ApproxPrefixIndex(1024)
        idx.record(pref.prompt_block_hashes(2000, segs, v0.block_size)[: 1984 // v0.block_size])
        v0.prefix_index = idx
        return [v0, inst(1, waiting=[s.RequestState(req(2, 2500), 0, 0)])]

    vs = views_()
    it = ref.iteration_time(vs[0])
    saved = ref.predict(vs[0], r, 1984, 0.0).saved
    assert it < ref.prefill_backlog(vs[1], (), 0.0) and it < ref.prefill_backlog(vs[0], (), 0.0) < it + saved
    for req_, want in ((r, [(9, 0)]), (plain, [])):
        pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
        pol.submit(req_, 0.0)
        assert [(a.request, a.instance) for a in pol.poll(0.0, views_())] == want
        held = ref.Held()
        held.submit(req_)
        assert held.poll(0.0, views_()) == want
    # A request that found room nowhere keeps its prefix for the next poll.
    pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
    pol.submit(r, 0.0)
    crowded = views_()
    crowded[0].waiting = [s.RequestState(req(1, 9000), 0, 0)]
    assert pol.poll(0.0, crowded) == [] and pol.pending() == 1
    assert [(a.request, a.instance) for a in pol.poll(0.0, views_())] == [(9, 0)]


def test_router_keeps_chat_sessions_where_their_history_is():
    # The live cache test's trace (multi-turn sessions behind four shared system prompts) on 2
    # instances past capacity, seed 0. A turn arrives while the previous one may still wait in the
    # engine: only the blocks of unfinished placements say where its history will be, and the
    # held queue lets a turn wait for that instance while it is on time there with the margin.
    # Before both, half the turns moved (52% stayed; hit rate 70.4% against llm-d's 77.5%,
    # attainment 86.0% against 84.3%); llm-d's scorer keeps every one, and queues for it.
    from slocore.live_bench import traces

    w = traces.at_rate(traces.make("prefix_chat", 300, 0), 160.0)
    names = ("slocore-router", "llmd_scorer+sarathi_fcfs")
    runs = {name: simulate(w, instances=2, seed=0, **preset(name)) for name in names}
    where = {rec.request.id: rec.instance for rec in runs["slocore-router"].recorder.records()}
    last, later, stayed = {}, 0, 0
    for i, prefix in enumerate(w.prefix):
        session = prefix[1][0]
        if session in last:
            later += 1
            stayed += last[session] == where[i]
        last[session] = where[i]
    hit = {k: r.stats["prefix_hit_tokens"] / r.stats["prefix_query_tokens"] for k, r in runs.items()}
    att = {k: r.summary["attainment"] for k, r in runs.items()}
    assert stayed / later >= 0.9  # 96%
    assert hit["slocore-router"] >= hit["llmd_scorer+sarathi_fcfs"] - 0.04  # 74.9% against 77.5%
    assert att["slocore-router"] >= att["llmd_scorer+sarathi_fcfs"] + 0.05  # 92.7% against 84.3%


def cached_view(i, queued_tokens, segs, prompt, cached_tokens):
    v = inst(i, waiting=[s.RequestState(req(i + 1, queued_tokens), 0, 0)] if queued_tokens else [])
    if cached_tokens:
        idx = _core.ApproxPrefixIndex(1024)
        idx.record(pref.prompt_block_hashes(prompt, segs, v.block_size)[: cached_tokens // v.block_size])
        v.prefix_index = idx
    return v


def held_poll(r, views_):
    pol = _core.make_global_policy("slo_predict", {"order": "fifo", "hold": True})
    pol.submit(r, 0.0)
    got = [(a.request, a.instance) for a in pol.poll(0.0, views_)]
    h = ref.Held()
    h.submit(r)
    assert h.poll(0.0, views_) == got
    return got


def test_hold_spends_spare_slack_on_a_cached_prefix():
    # Both instances have room. Instance 0 holds 576 of r's 600 prompt tokens behind 1,900 queued
    # ones: its first token is predicted well past the margin of instance 1's (empty). With a 1-s
    # TTFT SLO r is on time there with more than the margin (20%) to spare: the cache wins. With
    # 0.31 s it would still be on time, but without that spare slack: the earlier first token wins.
    segs = [(7, 576), (8, 24)]
    for ttft, want in ((1.0, 0), (0.31, 1)):
        r = s.Request(9, 0.0, 600, output_len=10, ttft=ttft, tpot=math.inf, prefix=segs)
        vs = [cached_view(0, 1900, segs, 600, 576), cached_view(1, 0, segs, 600, 0)]
        p0, p1 = (ref.predict(v, r, c, 0.0, (), "fifo") for v, c in zip(vs, (576, 0)))
        assert p0.finish > 1.2 * p1.finish and p0.saved > 0 and p0.loss == p1.loss == 0
        assert (p0.slack >= 0.2) == (ttft == 1.0) and p0.slack > 0
        assert all(ref.iteration_time(v) > ref.prefill_backlog(v, (), 0.0) for v in vs)  # room on both
        assert held_poll(r, vs) == [(9, want)]


def test_hold_waits_for_its_cache_only_while_the_other_instance_has_work():
    # Instance 0 holds 1,984 of r's 2,000 prompt tokens behind 6,000 queued ones: no room, even with
    # the prefill its cache saves. r is on time there with room to spare (TTFT SLO 5 s). While
    # instance 1 has prefill queued, r waits in the router for instance 0 (no instance idles for
    # it); when instance 1 has nothing queued, r goes there now. So does r with a TTFT SLO that
    # leaves it on time at instance 0 but with less than the margin (20%) to spare.
    segs = [(7, 1984), (8, 16)]
    views_ = lambda queued: [cached_view(0, 6000, segs, 2000, 1984), cached_view(1, queued, segs, 2000, 0)]  # noqa: E731
    r = s.Request(9, 0.0, 2000, output_len=10, ttft=5.0, tpot=math.inf, prefix=segs)
    p0 = ref.predict(views_(0)[0], r, 1984, 0.0, (), "fifo")
    assert ref.iteration_time(views_(0)[0]) - ref.prefill_backlog(views_(0)[0], (), 0.0) + p0.saved < 0 < p0.slack - 0.2
    assert ref.iteration_time(views_(1000)[1]) > ref.prefill_backlog(views_(1000)[1], (), 0.0)
    tight = s.Request(9, 0.0, 2000, output_len=10, ttft=p0.finish / 0.9, tpot=math.inf, prefix=segs)
    for r_, queued, want in ((r, 1000, []), (r, 0, [(9, 1)]), (tight, 1000, [(9, 1)])):
        assert held_poll(r_, views_(queued)) == want
