"""Cache-aware routers and prefix hashing: one placement of an 8k-token prompt (512 blocks of
16) over 16 instances (32 running + 32 waiting each, an approximate prefix index holding
part of the prompt), C++ policy vs the pure-Python reference (hashes, index lookups and the
choice: python/slocore/reference/{prefix,cache_routers}.py)."""

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import cache_routers as ref
from slocore.reference import prefix as pref

PROMPT, BS, N = 8192, 16, 16
REQ = s.Request(10**6, 0.0, PROMPT, output_len=64, prefix=[(42, PROMPT)])


def make_cluster(seed=0):
    rng = np.random.default_rng(seed)
    chain = pref.prompt_block_hashes(PROMPT, [(42, PROMPT)], BS)
    views, plain, rid = [], [], 0
    for i in range(N):
        v = s.InstanceView(i)
        v.block_size, v.kv_blocks_total, v.kv_blocks_free = BS, 20000, int(rng.integers(0, 20000))
        pv = dict(
            accepting=True,
            kv_blocks_total=20000,
            kv_blocks_free=v.kv_blocks_free,
            block_size=BS,
            running=[],
            waiting=[],
        )
        for q in ("running", "waiting"):
            states = []
            for _ in range(32):
                p, g = int(rng.integers(16, 2048)), int(rng.integers(0, 64)) if q == "running" else 0
                c = p + g - 1 if q == "running" and g else 0
                states.append(s.RequestState(s.Request(rid, 0.0, p, output_len=128), c, g))
                pv[q].append(dict(prompt_len=p, computed=c, generated=g))
                rid += 1
            setattr(v, q, states)
        idx = _core.ApproxPrefixIndex(100000)
        pidx = pref.ApproxPrefixIndex(100000)
        cut = int(rng.integers(0, len(chain)))
        idx.record(chain[:cut])
        pidx.record(chain[:cut])
        v.prefix_index = idx
        views.append(v)
        plain.append((pv, pidx))
    return views, plain


VIEWS, PLAIN = make_cluster()


def python_llmd():
    chain = pref.prompt_block_hashes(PROMPT, [(42, PROMPT)], BS)
    vs = [dict(pv, cached=pidx.match_blocks(chain) * BS) for pv, pidx in PLAIN]
    return ref.llmd_choose(len(chain), vs)


def python_kv_router():
    chain = pref.prompt_block_hashes(PROMPT, [(42, PROMPT)], BS)
    vs = [dict(pv, cached=pidx.match_blocks(chain) * BS) for pv, pidx in PLAIN]
    return ref.kv_router_choose(PROMPT, vs)


def cpp(name, params):
    pol = _core.make_global_policy(name, params)

    def run():  # placed, then finished: the policy's id ledger takes the same id again
        pol.submit(REQ, 0.0)
        inst = pol.poll(0.0, VIEWS)[0].instance
        pol.on_finished(REQ.id, inst, 0.0)
        return [v.id for v in VIEWS].index(inst)

    return run


IMPLS = {
    "llmd_scorer": (lambda: cpp("llmd_scorer", {}), lambda: python_llmd),
    "kv_router": (lambda: cpp("kv_router", {"prefix_source": "approximate"}), lambda: python_kv_router),
}


@pytest.mark.parametrize("name", list(IMPLS))
@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_place(benchmark, record_ratio, name, impl):
    benchmark.group = f"{name}: 8k-token prompt over 16 instances"
    fn = IMPLS[name][0 if impl == "cpp" else 1]()
    out = benchmark(fn)
    assert out == IMPLS[name][1]()()  # same choice both ways
    record_ratio(benchmark.group, impl)


@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_hash_chain(benchmark, record_ratio, impl):
    benchmark.group = "prefix_block_hashes: 8k-token prompt"
    fn = (
        (lambda: _core.prompt_block_hashes(REQ, BS))
        if impl == "cpp"
        else (lambda: pref.prompt_block_hashes(PROMPT, [(42, PROMPT)], BS))
    )
    assert len(benchmark(fn)) == (PROMPT - 1) // BS
    record_ratio(benchmark.group, impl)
