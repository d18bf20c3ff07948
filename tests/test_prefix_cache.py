"""Prefix caching as vLLM does it: chained block hashes (C++ = Python reference), the engine's
block cache (refcounts, LRU free queue), hand-checked hit/miss timings, KV accounting with
shared blocks, and the simulator's invariants with caching on."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore as s
from simkit import PyFcfs, config, profile
from slocore import _core
from slocore.reference import prefix as ref
from slocore.sim import runner, simulate, workloads
from test_sim_invariants import check_conserved

segments = st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(1, 80)), min_size=0, max_size=4)


@settings(max_examples=200, deadline=None)
@given(segments, st.integers(0, 60), st.sampled_from([1, 4, 16]), st.integers(0, 500))
def test_block_hashes_match_reference(segs, extra, bs, max_tokens):
    prompt = max(1, sum(n for _, n in segs) + extra)
    r = s.Request(0, 0.0, prompt, output_len=1, prefix=segs)
    assert _core.prefix_block_hashes(r, bs, max_tokens) == ref.prefix_block_hashes(prompt, segs, bs, max_tokens)
    assert _core.prompt_block_hashes(r, bs) == ref.prompt_block_hashes(prompt, segs, bs)


def test_prompts_share_blocks_until_their_segments_differ():
    a = s.Request(0, 0.0, 50, output_len=1, prefix=[(7, 40), (1, 10)])
    b = s.Request(1, 0.0, 50, output_len=1, prefix=[(7, 40), (2, 10)])
    ha, hb = _core.prefix_block_hashes(a, 16, 50), _core.prefix_block_hashes(b, 16, 50)
    assert len(ha) == 3 and ha[:2] == hb[:2] and ha[2] != hb[2]  # block 2 holds tokens 32..47
    # A prompt covered by its segments continues its last one into the reply (chat history).
    turn1 = s.Request(2, 0.0, 40, output_len=30, prefix=[(9, 40)])
    turn2 = s.Request(3, 0.0, 90, output_len=1, prefix=[(9, 90)])
    assert _core.prefix_block_hashes(turn1, 16, 70) == _core.prefix_block_hashes(turn2, 16, 70)
    tail = s.Request(4, 0.0, 50, output_len=1, prefix=[(7, 40)])  # 10 unique tokens after the segment
    assert _core.prefix_block_hashes(tail, 16, 10**6) == ha[:2]  # never identified past the segments


def test_request_prefix_is_validated():
    with pytest.raises(ValueError, match="prefix"):
        s.Request(0, 0.0, 10, output_len=1, prefix=[(1, 11)])
    with pytest.raises(ValueError, match="prefix"):
        s.Request(0, 0.0, 10, output_len=1, prefix=[(1, 0)])


OPS = ["insert", "acquire", "release", "evict"]
# Hashes that share their low bits (the C++ index's home slot) and sit at its end, so that
# lookups probe past each other, wrap around, and evictions shift entries back.
COLLIDING = [k * 1024 + o for k in range(4) for o in (0, 1, 1022, 1023)] + [2**64 - 1, 2**64 - 1024]


def _same_as_reference(seq, keys):
    """Applies (op, hash) pairs to the C++ cache and the reference, comparing after each."""
    c, r = _core.PrefixCache(), ref.PrefixCache()
    for op, h in seq:
        if op == "insert":
            assert c.insert(h) == r.insert(h)
        elif op == "acquire" and r.refs(h) >= 0:
            assert c.acquire(h) == r.acquire(h)
        elif op == "release" and r.refs(h) > 0:
            assert c.release(h) == r.release(h)
        elif op == "evict":
            assert c.evict_lru() == r.evict_lru()
        assert c.free_queue() == r.free_queue() and len(c) == len(r) and c.cached_free == r.cached_free
        assert [c.refs(x) for x in keys] == [r.refs(x) for x in keys]
        assert c.match_blocks(keys) == r.match_blocks(keys)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 7)), max_size=60))
def test_prefix_cache_matches_reference(seq):
    _same_as_reference(seq, list(range(8)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(COLLIDING)), max_size=80))
def test_prefix_cache_matches_reference_with_colliding_hashes(seq):
    _same_as_reference(seq, COLLIDING)


def test_prefix_cache_refuses_blocks_it_does_not_hold():
    c = _core.PrefixCache()
    with pytest.raises(ValueError, match="prefix_cache: no such cached block"):
        c.acquire(5)
    with pytest.raises(ValueError, match="prefix_cache: no such cached block"):
        c.release(5)
    assert c.insert(5) and c.release(5)
    with pytest.raises(ValueError, match="prefix_cache: released a block nobody references"):
        c.release(5)
    assert c.free_queue() == [5] and c.refs(5) == 0  # the refused calls changed nothing


def test_prefix_cache_grows_and_reuses_slots_like_the_reference():
    c, r = _core.PrefixCache(), ref.PrefixCache()
    keys = [(k * 2654435761) % 2**64 for k in range(1, 3001)] + [k * 4096 for k in range(1, 1001)]
    for h in keys:  # past the first index sizes, then every block freed and half evicted
        assert c.insert(h) == r.insert(h)
    for h in keys[::-1]:
        assert c.release(h) == r.release(h)
    for _ in range(len(keys) // 2):
        assert c.evict_lru() == r.evict_lru()
    for h in keys[:500]:  # evicted ones come back in reused slots
        assert c.insert(h) == r.insert(h)
    assert c.free_queue() == r.free_queue() and len(c) == len(r) and c.evictions == r.evictions
    assert [c.refs(h) for h in keys] == [r.refs(h) for h in keys]
    assert c.match_blocks(keys) == r.match_blocks(keys) and c.match_blocks(keys[::-1]) == r.match_blocks(keys[::-1])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.lists(st.lists(st.integers(0, 20), max_size=6), max_size=20))
def test_approx_index_matches_reference(cap, chains):
    c, r = _core.ApproxPrefixIndex(cap), ref.ApproxPrefixIndex(cap)
    for ch in chains:
        c.record(ch)
        r.record(ch)
        assert len(c) == len(r) <= cap
        for probe in chains:
            assert c.match_blocks(probe) == r.match_blocks(probe)


def test_eviction_is_least_recently_freed_first():
    c = _core.PrefixCache()
    for h in (1, 2, 3):
        assert c.insert(h)
    assert c.release(3) and c.release(1) and c.release(2)
    assert c.free_queue() == [3, 1, 2] and c.cached_free == 3
    assert c.acquire(1) and c.free_queue() == [3, 2]  # a hit leaves the free queue...
    assert not c.acquire(1)  # ...once
    assert c.evict_lru() and c.refs(3) == -1 and c.free_queue() == [2]
    assert not c.release(1) and c.release(1) and c.free_queue() == [2, 1]
    assert c.evict_lru() and c.evict_lru() and not c.evict_lru() and len(c) == 0


def ttft_of(res, rid):
    rec = [r for r in res.recorder.records() if r.request.id == rid][0]
    return rec.token_times[0] - rec.request.arrival


def two_identical(prefix=((5, 100),), caching=True, **coeffs):
    reqs = [s.Request(i, 10.0 * i, 100, output_len=3, ttft=10, tpot=10, prefix=list(prefix)) for i in range(2)]
    return _core.simulate(reqs, config(profile(**coeffs), instances=1, prefix_caching=caching))


def test_second_identical_prompt_prefills_only_its_uncached_tokens():
    # t_c 10 ms, c_p 0.1 ms/token. The first request computes its 100 prompt tokens; its 6
    # full blocks (96 tokens) stay cached, and the second (prompt_len - 1 = 99 -> 6 blocks)
    # prefills 4 tokens: shorter by exactly the 96 cached tokens' cost.
    res = two_identical()
    assert ttft_of(res, 0) == pytest.approx(0.01 + 100 * 1e-4, rel=1e-12)
    assert ttft_of(res, 1) == pytest.approx(0.01 + 4 * 1e-4, rel=1e-12)
    assert res.stats["prefix_hit_tokens"] == 96 and res.stats["prefix_query_tokens"] == 200
    # The cached context is still read: b_p (prefill x cached tokens) charges 4 x 96.
    res = two_identical(b_p=1e-6, a_p=1e-7)
    assert ttft_of(res, 1) == pytest.approx(0.01 + 1e-7 * 16 + 1e-6 * 4 * 96 + 4 * 1e-4, rel=1e-12)
    # Off, or without prefix identity: no hit.
    for res in (two_identical(caching=False), two_identical(prefix=())):
        assert ttft_of(res, 1) == pytest.approx(ttft_of(res, 0), rel=1e-12)
        assert res.stats["prefix_hit_tokens"] == 0


def test_lru_eviction_in_the_engine():
    # One instance with 16 blocks of 16 tokens; one-token answers to 96-token prompts (6
    # blocks) of groups A, B, C, one after the other. Each leaves its 6 blocks cached and
    # free, a request's tail first in the free queue. A hit is at most (96 - 1) // 16 = 5
    # blocks (vLLM recomputes the last prompt token).
    #  C needs 6 new blocks with 10 uncached: A (least recently freed) loses a5, a4.
    #  A again: hits a0..a3 (64 tokens), needs 2 new blocks: B, now the oldest, loses b5, b4.
    #  C again: hits 5 blocks (80), needs 1 new block: B loses b3.  B again: hits 48 tokens.
    seq = [1, 2, 3, 1, 3, 2]
    reqs = [s.Request(i, 5.0 * i, 96, output_len=1, ttft=10, tpot=10, prefix=[(g, 96)]) for i, g in enumerate(seq)]
    res = _core.simulate(reqs, config(profile(kv_blocks=16), instances=1))
    ttft = [ttft_of(res, i) for i in range(len(seq))]

    def cost(cached):
        return 0.01 + (96 - cached) * 1e-4

    assert ttft == pytest.approx([cost(0), cost(0), cost(0), cost(64), cost(80), cost(48)], rel=1e-12)
    assert res.stats["prefix_hit_tokens"] == 64 + 80 + 48


@pytest.mark.parametrize("scheduler", ["py_fcfs", "sarathi_fcfs", "slo_triage"])
def test_blocks_running_requests_hold_take_no_free_kv_to_admit(scheduler):
    # vLLM charges a request's admission only its new blocks and the cached ones no request
    # references. One instance, 14 blocks of 16 tokens, a 0.1-s step. A (160-token prompt =
    # 10 blocks, 40 tokens out) holds 11 blocks when B (A's 160 tokens + 16 of its own) comes
    # at 1 s: B needs 1 new block, 3 are free, so it starts at once and A never stalls (A ends
    # at 13 blocks, B holds 1 of its own). Counting B's 10 shared blocks too, it waited for A.
    sched = PyFcfs if scheduler == "py_fcfs" else (lambda: _core.make_batch_scheduler(scheduler))
    a = s.Request(0, 0.0, 160, output_len=40, ttft=30, tpot=10, prefix=[(7, 160)])
    b = s.Request(1, 1.0, 176, output_len=1, ttft=30, tpot=10, prefix=[(7, 160), (8, 16)])
    res = _core.simulate([a, b], config(profile(kv_blocks=14, t_c=0.1), instances=1, sched=sched))
    a_end = max(r.token_times[-1] for r in res.recorder.records() if r.request.id == 0)
    assert ttft_of(res, 1) < 0.25 and a_end > 3.5  # B admitted within two steps, long before A ends
    assert res.stats["prefix_hit_tokens"] == 160 and res.stats["preemptions"] == 0


@pytest.mark.parametrize("shared, running", [(-16, False), (8, False), (48, False), (48, True)])
def test_a_bad_shared_count_is_refused_naming_the_field(shared, running):
    v = s.InstanceView(0)
    v.kv_blocks_total = v.kv_blocks_free = 100
    st_ = s.RequestState(s.Request(1, 0.0, 100, output_len=5, ttft=1, tpot=1), 32, 0)
    st_.cached, st_.shared = 32, shared  # negative, not whole blocks, past `cached` / `computed`
    v.running, v.waiting = ([st_], []) if running else ([], [st_])
    with pytest.raises(ValueError, match="shared"):
        _core.make_batch_scheduler("sarathi_fcfs").schedule(v, 0.0)


class CheckingFcfs(PyFcfs):
    """FCFS that checks the KV accounting at every step: cached free blocks are free KV and
    never push usage past capacity; shared blocks are counted once (used <= the requests'
    own block counts); an engine with nothing running holds no block."""

    shared_seen = 0
    prefixes_checked = 0
    shared_waiting = 0
    shared_running = 0

    def schedule(self, v, now):
        cache = v.prefix_cache
        used = v.kv_blocks_total - v.kv_blocks_free
        assert 0 <= v.kv_blocks_free <= v.kv_blocks_total
        assert cache.cached_free <= v.kv_blocks_free  # used + cached free <= capacity
        held = sum(v.blocks_for(x.computed) for x in v.running)
        assert used <= held
        CheckingFcfs.shared_seen += used < held
        if not v.running:
            assert used == 0 and cache.cached_free == len(cache)  # nothing leaked or pinned
        for r in v.running:  # shared: its blocks other requests hold too (preempting it keeps them)
            assert r.shared % v.block_size == 0 and 0 <= r.shared <= r.computed
            if r.request.prefix:
                chain = _core.prefix_block_hashes(
                    r.request, v.block_size, r.request.prompt_len + (r.request.output_len or 0)
                )
                multi = sum(1 for h in chain[: r.computed // v.block_size] if cache.refs(h) >= 2)
                assert r.shared // v.block_size <= multi, r.request.id
                CheckingFcfs.shared_running += r.shared > 0
        for w in v.waiting:  # a waiting request shows its cached prefix, in full blocks
            assert w.computed % v.block_size == 0 or w.computed == w.request.prompt_len
            if w.computed == w.cached and w.request.prefix:  # and exactly what the cache holds now
                chain = _core.prefix_block_hashes(
                    w.request, v.block_size, w.request.prompt_len + (w.request.output_len or 0)
                )
                cap = min((w.request.prompt_len + w.generated - 1) // v.block_size, len(chain))
                assert w.cached == min(cache.match_blocks(chain), cap) * v.block_size, w.request.id
                CheckingFcfs.prefixes_checked += w.cached > 0
                # shared: the leading cached blocks running requests reference (no free KV needed)
                in_use = 0
                while in_use < w.cached // v.block_size and cache.refs(chain[in_use]) > 0:
                    in_use += 1
                assert w.shared == in_use * v.block_size, w.request.id
                CheckingFcfs.shared_waiting += w.shared > 0
            else:
                assert w.shared == 0
        return super().schedule(v, now)


def test_kv_accounting_and_invariants_with_caching_on():
    w = workloads.multi_turn_chat(rate=4.0, sessions=60, seed=1, think_s=0.5, max_context=2048)
    reqs = runner.requests_of(w)
    CheckingFcfs.shared_seen = CheckingFcfs.shared_waiting = CheckingFcfs.shared_running = 0
    runs = [
        _core.simulate(reqs, config(profile(kv_blocks=200), instances=2, sched=CheckingFcfs, seed=3)) for _ in range(2)
    ]
    res = runs[0]
    check_conserved(reqs, res)
    assert res.stats["preemptions"] > 0  # KV pressure was real
    assert res.stats["prefix_hit_tokens"] > 0 and CheckingFcfs.shared_seen > 0  # and so was sharing
    assert CheckingFcfs.prefixes_checked > 0 and CheckingFcfs.shared_waiting > 0 and CheckingFcfs.shared_running > 0
    assert all(r.outcome == s.Outcome.FINISHED for r in res.recorder.records())
    times = [[list(r.token_times) for r in x.recorder.records()] for x in runs]
    assert times[0] == times[1]  # same seed, same run


@pytest.mark.parametrize("scheduler", ["edf", "mlfq", "slide_batching", "vllm_priority", "slo_triage"])
def test_preempting_a_request_that_shares_its_prefix_never_idles_the_engine(scheduler):
    """A preempted request's blocks that running requests share stay in use, so a plan's
    preemptions can free fewer blocks than its scheduler counted and leave none of its items
    feasible. The engine asks again on the view after those preemptions; before, it idled with
    running requests until the next arrival, or for good (EDF stalled 45 of these 84 requests,
    MLFQ 32)."""
    import copy

    from slocore import profiles

    p = copy.deepcopy(profiles.load_profile("h100-llama2-7b"))
    p["kv"]["num_blocks"] = 1200  # long agent contexts on a small KV: preemption under sharing
    w = workloads.agentic(rate=1.0, tasks=20, seed=0)
    res = simulate(w, profile=p, instances=1, global_policy="round_robin", batch_scheduler=scheduler, seed=0)
    check_conserved(runner.requests_of(w), res)
    assert res.stats["preemptions"] > 0 and res.stats["prefix_hit_tokens"] > 0
    assert res.stats["stalled"] == 0 and res.summary["finished"] == len(w.arrival), res.stats


def test_pd_with_caching_hits_on_prefill_instances():
    w = workloads.agentic(rate=1.0, tasks=20, seed=0, tool_gap_s=0.2)
    res = simulate(
        w,
        mode="pd",
        prefill_instances=2,
        decode_instances=2,
        prefill_policy="kv_router",
        decode_policy="least_outstanding",
        profile="h100-llama2-7b",
    )
    check_conserved(runner.requests_of(w), res)
    assert res.stats["prefix_hit_tokens"] > 0 and res.stats["plan_violations"] == 0


@pytest.mark.parametrize("policy", ["hfx", "goroute", "sibyl"])
def test_slo_policies_run_with_cached_prefixes(policy):
    # HFX budgets, GoRouting's estimates and SIBYL's handoff estimate subtract a candidate's
    # cached prefix; every request still finishes once.
    w = workloads.agentic(rate=1.0, tasks=25, seed=4, tool_gap_s=0.3)
    res = simulate(w, instances=3, global_policy=policy)
    check_conserved(runner.requests_of(w), res)
    assert res.stats["prefix_hit_tokens"] > 0 and res.summary["finished"] == len(w)
