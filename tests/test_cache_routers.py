"""Cache-aware baseline routers (llm-d weighted scorer, Dynamo KvRouter): C++ = Python
reference on random views, parameters validated, and on prefix-sharing traffic they find
more cached prefix than cache-blind routing."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from slocore import _core
from slocore.reference import cache_routers as ref
from slocore.reference import prefix as pref
from slocore.sim import simulate, workloads


@st.composite
def cluster(draw):
    n = draw(st.integers(1, 5))
    bs = draw(st.sampled_from([4, 16]))
    prompt = draw(st.integers(2, 200))
    segs = draw(st.sampled_from([[], [(1, prompt)], [(1, min(prompt, 64)), (2, max(1, prompt - 64))]]))
    if sum(x for _, x in segs) > prompt:
        segs = [(1, prompt)]
    req = s.Request(10**6, 0.0, prompt, output_len=5, prefix=segs)
    chain = pref.prompt_block_hashes(prompt, segs, bs)
    views, plain, rid = [], [], 0
    for i in range(n):
        v = s.InstanceView(i)
        v.block_size = bs
        v.accepting = draw(st.booleans()) or i == 0
        v.kv_blocks_total = draw(st.integers(0, 400))
        v.kv_blocks_free = draw(st.integers(0, v.kv_blocks_total))
        pv = dict(
            accepting=v.accepting,
            kv_blocks_total=v.kv_blocks_total,
            kv_blocks_free=v.kv_blocks_free,
            block_size=bs,
            running=[],
            waiting=[],
        )
        for q in ("running", "waiting"):
            states = []
            for _ in range(draw(st.integers(0, 4))):
                p = draw(st.integers(1, 300))
                gen = draw(st.integers(0, 5))
                comp = draw(st.integers(0, p + gen))
                states.append(s.RequestState(s.Request(rid, 0.0, p, output_len=10), comp, gen))
                pv[q].append(dict(prompt_len=p, computed=comp, generated=gen))
                rid += 1
            setattr(v, q, states)
        idx, pidx = _core.ApproxPrefixIndex(64), pref.ApproxPrefixIndex(64)
        cut = draw(st.integers(0, len(chain)))
        idx.record(chain[:cut])
        pidx.record(chain[:cut])
        v.prefix_index = idx
        pv["cached"] = pidx.match_blocks(chain) * bs
        views.append(v)
        plain.append(pv)
    return req, views, plain, len(chain)


def pick(policy, req, views):
    policy.submit(req, 0.0)
    out = policy.poll(0.0, views)
    return [v.id for v in views].index(out[0].instance) if out else -1


@settings(max_examples=200, deadline=None)
@given(cluster(), st.floats(0, 5), st.floats(0, 5), st.floats(0, 5))
def test_llmd_scorer_matches_reference(c, wp, wq, wk):
    req, views, plain, blocks = c
    pol = _core.make_global_policy("llmd_scorer", {"w_prefix": wp, "w_queue": wq, "w_kv": wk})
    assert pick(pol, req, views) == ref.llmd_choose(blocks, plain, w_prefix=wp, w_queue=wq, w_kv=wk)


@settings(max_examples=200, deadline=None)
@given(cluster(), st.floats(0, 4))
def test_kv_router_matches_reference(c, w):
    req, views, plain, _ = c
    pol = _core.make_global_policy("kv_router", {"overlap_weight": w, "prefix_source": "approximate"})
    assert pick(pol, req, views) == ref.kv_router_choose(req.prompt_len, plain, overlap_weight=w)


def test_kv_router_cost_by_hand():
    # 16-token blocks; one running decode of 100 + 3 tokens; the request has 64 of its 100
    # prompt tokens cached: prefill (100 - 64) / 16 = 2.25, active 7 + 7 = 14 blocks.
    v = dict(
        accepting=True,
        kv_blocks_total=100,
        kv_blocks_free=50,
        block_size=16,
        cached=64,
        waiting=[],
        running=[dict(prompt_len=100, computed=102, generated=3)],
    )
    assert ref.kv_router_cost(100, v) == pytest.approx(2.25 + 14)
    assert ref.kv_router_cost(100, v, overlap_weight=2.0) == pytest.approx(4.5 + 14)


def test_bad_params():
    with pytest.raises(ValueError, match="prefix_source"):
        _core.make_global_policy("llmd_scorer", {"prefix_source": "psychic"})
    with pytest.raises(ValueError, match="overlap_weight"):
        _core.make_global_policy("kv_router", {"overlap_weight": -1.0})
    with pytest.raises(ValueError):
        _core.make_global_policy("kv_router", {"temperature": 1.0})


@pytest.mark.parametrize("policy", ["llmd_scorer", "kv_router"])
def test_cache_aware_routing_finds_more_cached_prefix(policy):
    w = workloads.multi_turn_chat(rate=2.0, sessions=80, seed=2, think_s=2.0)
    hits = {
        p: simulate(w, instances=4, global_policy=p).stats["prefix_hit_tokens"]
        for p in ("round_robin", "least_outstanding", policy)
    }
    assert hits[policy] > 1.3 * max(hits["round_robin"], hits["least_outstanding"])
