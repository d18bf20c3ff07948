"""Pure-Python reference for the router's one read of a token-id prompt
(csrc/slocore/serve/token_prompt.h, ``_core.token_id_prompt``): a non-empty list of exact
ints that fit 64 bits gives its smallest and largest id and its prefix segments
(``prefix.id_block_segments``); anything else gives None. Test oracle for the C++."""

from __future__ import annotations

from slocore.reference.prefix import id_block_segments

LO, HI = -(1 << 63), 1 << 63


def token_id_prompt(ids, block_size: int, max_blocks: int):
    if not isinstance(ids, list) or not ids or set(map(type, ids)) != {int}:
        return None
    lo, hi = min(ids), max(ids)
    if lo < LO or hi >= HI:
        return None
    if max_blocks < 0:
        raise ValueError("max_blocks: must be >= 0")
    return lo, hi, id_block_segments(ids, block_size, block_size, max_blocks)
