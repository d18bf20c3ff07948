"""Prefix-sharing, bursty and steady-state workloads: shapes, sharing and determinism."""

import numpy as np
import pytest

from slocore.sim import simulate
from slocore.sim import workloads as wl


def test_multi_turn_chat_history_grows_and_is_shared():
    w = wl.multi_turn_chat(rate=1.0, sessions=50, seed=0)
    assert w.prefix is not None and len(w) > 50  # sessions have several turns
    by_group = {}
    for i in np.argsort(w.arrival, kind="stable"):
        ((g, n),) = w.prefix[i]
        assert n == w.prompt_len[i]  # the whole prompt is the session's history
        by_group.setdefault(g, []).append((w.prompt_len[i], w.output_len[i]))
    for turns in by_group.values():  # each prompt = previous prompt + reply + a new message
        for (p0, o0), (p1, _) in zip(turns, turns[1:]):
            assert p1 > p0 + o0
    assert max(len(t) for t in by_group.values()) >= 3
    assert np.array_equal(wl.multi_turn_chat(rate=1.0, sessions=50, seed=0).arrival, w.arrival)


def test_agentic_shares_few_system_prompts():
    w = wl.agentic(rate=0.5, tasks=60, seed=1, n_prompts=3)
    systems = {segs[0] for segs in w.prefix}
    assert len(systems) <= 3 and len(w) > 60
    assert all(segs[0][1] + segs[1][1] == p for segs, p in zip(w.prefix, w.prompt_len))
    assert np.mean(w.output_len) < 400 and np.mean(w.prompt_len) > 2000


def test_rag_prompts_are_4k_to_16k():
    w = wl.rag(n=200, seed=0)
    body = w.prompt_len - np.array([segs[-1][1] for segs in w.prefix])
    assert body.min() >= 4096 and body.max() <= 16384
    firsts = [segs[0][0] for segs in w.prefix]
    assert len(set(firsts)) < len(firsts) / 2  # popular passages lead many prompts


def test_bursty_arrivals():
    g = wl.bursty_chat(rate=4.0, n=4000, seed=0, cv=4.0)
    gaps = np.diff(g.arrival)
    assert gaps.std() / gaps.mean() == pytest.approx(4.0, rel=0.25)
    o = wl.bursty_chat(rate=4.0, n=4000, seed=0, process="onoff", on_s=5.0, off_s=15.0)
    assert len(o) / o.duration == pytest.approx(4.0, rel=0.15)
    assert (np.diff(o.arrival) > 10.0).sum() >= 40  # the silences (~49 on/off cycles of 20 s)
    with pytest.raises(ValueError, match="process"):
        wl.bursty_chat(process="zigzag")


def test_steady_state_run_excludes_warmup():
    w = wl.steady("sharegpt_like", rate=5.0, duration_s=40.0, warmup_s=10.0, seed=0)
    assert w.arrival.max() < 40.0 and w.params["warmup_s"] == 10.0
    res = simulate(w, instances=2)
    assert res.summary["requests"] == int((w.arrival >= 10.0).sum())
    full = simulate(w, instances=2, warmup_s=0.0)
    assert full.summary["requests"] == len(w)
    with pytest.raises(ValueError, match="warmup_s"):
        wl.steady("sharegpt_like", duration_s=5.0, warmup_s=10.0)


def test_prefix_survives_head_merge_and_rate_scaling():
    w = wl.agentic(tasks=10, seed=0)
    h = w.head(5)
    assert list(h.prefix) == list(w.prefix[:5])
    m = w.merge(wl.uniform_random(n=5))
    assert len(m.prefix) == len(m) and sum(1 for x in m.prefix if x == ()) == 5
    assert list(w.rate_scaled(2.0).prefix) == list(w.prefix)
    with pytest.raises(ValueError, match="prefix"):
        w._with(prefix=[((1, 10**6),)] * len(w))
