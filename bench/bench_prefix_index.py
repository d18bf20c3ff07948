"""The router's approximate prefix index: one lookup of an 8k-token prompt (512 blocks of 16)
over 64 instances holding 1M cached blocks in total (16,384 each, as chains of 512), C++
(``match_blocks_many``: one call over the 64 ``ApproxPrefixIndex``) vs the pure-Python
reference (python/slocore/reference/prefix.py). The prompt is fully held by one instance and
half held by another (the rest miss at block 0, as most do in a cache-aware cluster). Also:
the same plus hashing the prompt (``prompt_block_hashes``), and memory per cached block
(RSS growth while filling, printed)."""

import numpy as np
import pytest

import slocore as s
from slocore import _core
from slocore.reference import prefix as pref

PROMPT, BS, N, TOTAL = 8192, 16, 64, 1 << 20
PER = TOTAL // N
CHAIN_BLOCKS = (PROMPT - 1) // BS  # the looked-up chain: full blocks of prompt_len - 1 tokens
REQ = s.Request(10**6, 0.0, PROMPT, output_len=64, prefix=[(42, PROMPT)])
CHAIN = _core.prompt_block_hashes(REQ, BS)
assert len(CHAIN) == CHAIN_BLOCKS


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fill(make):
    rng = np.random.default_rng(0)
    before = rss_bytes()
    idx = []
    for i in range(N):
        x = make(PER)
        for _ in range(PER // CHAIN_BLOCKS):
            x.record(rng.integers(0, 2**63, CHAIN_BLOCKS, dtype=np.int64).astype(np.uint64).tolist())
        if i == 0:
            x.record(CHAIN)
        elif i == 1:
            x.record(CHAIN[: CHAIN_BLOCKS // 2])
        idx.append(x)
    return idx, (rss_bytes() - before) / sum(len(x) for x in idx)


@pytest.fixture(scope="module")
def cpp():
    idx, per_block = fill(_core.ApproxPrefixIndex)
    print(f"\nC++ ApproxPrefixIndex: {sum(len(x) for x in idx)} blocks, RSS {per_block:.1f} bytes per cached block")
    return idx


@pytest.fixture(scope="module")
def py():
    idx, per_block = fill(pref.ApproxPrefixIndex)
    print(f"\nPython reference: {sum(len(x) for x in idx)} blocks, RSS {per_block:.1f} bytes per cached block")
    return idx


def test_lookup_cpp(benchmark, record_ratio, cpp):
    out = benchmark(_core.match_blocks_many, cpp, CHAIN)
    assert out[0] == CHAIN_BLOCKS and out[1] == CHAIN_BLOCKS // 2
    record_ratio("prefix lookup 8k prompt x 64 inst (1M blk)", "cpp")


def test_lookup_python(benchmark, record_ratio, py, cpp):
    out = benchmark(lambda: [x.match_blocks(CHAIN) for x in py])
    assert out == _core.match_blocks_many(cpp, CHAIN)
    record_ratio("prefix lookup 8k prompt x 64 inst (1M blk)", "python")


def test_hash_and_lookup_cpp(benchmark, record_ratio, cpp):
    out = benchmark(lambda: _core.match_blocks_many(cpp, _core.prompt_block_hashes(REQ, BS)))
    assert out[0] == CHAIN_BLOCKS
    record_ratio("prefix hash+lookup 8k prompt x 64 inst", "cpp")


def test_hash_and_lookup_python(benchmark, record_ratio, py):
    def run():
        chain = pref.prompt_block_hashes(PROMPT, [(42, PROMPT)], BS)  # hashed once, as the C++ does
        return [x.match_blocks(chain) for x in py]

    out = benchmark(run)
    assert out[0] == CHAIN_BLOCKS
    record_ratio("prefix hash+lookup 8k prompt x 64 inst", "python")
