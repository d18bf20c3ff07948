"""Pure-Python reference for prefix caching (csrc/slocore/core/prefix.h and
csrc/slocore/sim/prefix_cache.h): the chained block hashes of a prompt described by
segments of shared texts, the router's approximate LRU index, and an engine's block cache
(reference counts, free queue least recently freed first). Test oracle for the C++.
"""

from __future__ import annotations

from collections import OrderedDict

MASK = (1 << 64) - 1
ROOT = 0x736C6F636F726531


def mix(h: int, x: int) -> int:
    """splitmix64 finaliser over h and x (the C++ `mix`), all arithmetic mod 2^64."""
    x &= MASK
    z = h ^ ((x + 0x9E3779B97F4A7C15 + ((h << 6) & MASK) + (h >> 2)) & MASK)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def prefix_block_hashes(prompt_len: int, prefix, block_size: int, max_tokens: int) -> list[int]:
    """Hashes of the full blocks among the first min(max_tokens, identified) tokens; `prefix`
    is a list of (group, len). Generated tokens continue the last segment when the segments
    cover the prompt."""
    if not prefix:
        return []
    covered = sum(n for _, n in prefix)
    is_open = covered >= prompt_len
    ident = max_tokens if is_open else min(max_tokens, covered)
    out, si, off, parent, last = [], 0, 0, ROOT, len(prefix) - 1
    for _ in range(max(ident, 0) // block_size):
        content, need = block_size, block_size
        while need > 0:
            group, seg_len = prefix[si]
            avail = need if (si == last and is_open) else seg_len - off
            take = min(need, avail)
            content = mix(mix(mix(content, group), off), take)
            off += take
            need -= take
            if off == seg_len and si < last:
                si, off = si + 1, 0
        parent = mix(parent, content)
        out.append(parent)
    return out


ID_SEED = 0x69642D626C6F636B


def id_block_segments(ids, ids_per_block: int, tokens_per_block: int, max_blocks: int) -> list[tuple[int, int]]:
    """One (group, len) segment per block of `ids_per_block` ids (token ids, or characters in
    the text fallback), standing for `tokens_per_block` tokens; a last partial block counts
    ceil(ids * tokens_per_block / ids_per_block); at most `max_blocks` segments."""
    if ids_per_block < 1:
        raise ValueError("ids_per_block: must be >= 1")
    if tokens_per_block < 1:
        raise ValueError("tokens_per_block: must be >= 1")
    out = []
    for start in range(0, len(ids), ids_per_block):
        if len(out) >= max_blocks:
            break
        block = ids[start : start + ids_per_block]
        g = ID_SEED
        for x in block:
            g = mix(g, x)
        n = tokens_per_block if len(block) == ids_per_block else -(-len(block) * tokens_per_block // ids_per_block)
        out.append((g, n))
    return out


def prompt_block_hashes(prompt_len: int, prefix, block_size: int) -> list[int]:
    return prefix_block_hashes(prompt_len, prefix, block_size, prompt_len - 1)


def leading(chain, present) -> int:
    n = 0
    while n < len(chain) and chain[n] in present:
        n += 1
    return n


class ApproxPrefixIndex:
    """What a router sent to one instance: LRU over block hashes, capacity in blocks."""

    def __init__(self, capacity_blocks: int):
        if capacity_blocks < 1:
            raise ValueError("capacity_blocks: must be >= 1")
        self.capacity = capacity_blocks
        self.lru: OrderedDict[int, None] = OrderedDict()  # first: least recent

    def match_blocks(self, chain) -> int:
        return leading(chain, self.lru)

    def record(self, chain) -> None:
        for h in reversed(chain):  # the chain's first block ends most recent
            self.lru[h] = None
            self.lru.move_to_end(h)
        while len(self.lru) > self.capacity:
            self.lru.popitem(last=False)

    def __len__(self) -> int:
        return len(self.lru)


class BlockSet:
    """An engine's reported cached blocks (the C++ BlockSet): a plain set."""

    def __init__(self):
        self.blocks: set[int] = set()

    def match_blocks(self, chain) -> int:
        return leading(chain, self.blocks)

    def add(self, hs) -> None:
        self.blocks.update(hs)

    def remove(self, hs) -> None:
        self.blocks.difference_update(hs)

    def clear(self) -> None:
        self.blocks.clear()

    def __len__(self) -> int:
        return len(self.blocks)


class PrefixCache:
    """One engine's cache: refs per cached block; unreferenced blocks wait in a free queue,
    least recently freed evicted first."""

    def __init__(self):
        self.refs_: dict[int, int] = {}
        self.free: OrderedDict[int, None] = OrderedDict()
        self.evictions = 0

    def match_blocks(self, chain) -> int:
        return leading(chain, self.refs_)

    def acquire(self, h: int) -> bool:
        was_free = self.refs_[h] == 0
        if was_free:
            del self.free[h]
        self.refs_[h] += 1
        return was_free

    def release(self, h: int) -> bool:
        if self.refs_[h] <= 0:
            raise ValueError("prefix_cache: released a block nobody references")
        self.refs_[h] -= 1
        if self.refs_[h]:
            return False
        self.free[h] = None
        return True

    def insert(self, h: int) -> bool:
        if h in self.refs_:
            return False
        self.refs_[h] = 1
        return True

    def evict_lru(self) -> bool:
        if not self.free:
            return False
        h, _ = self.free.popitem(last=False)
        del self.refs_[h]
        self.evictions += 1
        return True

    def refs(self, h: int) -> int:
        return self.refs_.get(h, -1)

    def free_queue(self) -> list[int]:
        return list(self.free)

    @property
    def cached_free(self) -> int:
        return len(self.free)

    def __len__(self) -> int:
        return len(self.refs_)
