"""Pure-Python reference for the cache-aware baseline routers
(csrc/slocore/baselines/cache_routers.h): llm-d's weighted scorer and Dynamo's KvRouter
cost. A view here is a plain dict: accepting, waiting / running (lists of dicts with
prompt_len, computed, generated), kv_blocks_total / kv_blocks_free, block_size, and
`cached`: the leading prompt tokens this instance holds for the request being placed.
`placed` is {instance index: (requests, prompt tokens)} placed earlier in the same poll.
"""

from __future__ import annotations


def _num_tokens(s) -> int:
    return s["prompt_len"] + s["generated"]


def _in_prefill(s) -> bool:
    return s["generated"] == 0 or _num_tokens(s) - s["computed"] > 1


def _blocks(tokens: int, bs: int) -> int:
    return (tokens + bs - 1) // bs


def llmd_choose(prompt_blocks: int, views, placed=None, w_prefix=3.0, w_queue=2.0, w_kv=2.0) -> int:
    """Index of the highest w_prefix*prefix + w_queue*queue + w_kv*kv score (ties: lowest);
    prompt_blocks = len(prompt_block_hashes(...)) of the request; -1 when none accepts."""
    placed = placed or {}
    ok = [i for i, v in enumerate(views) if v["accepting"]]
    if not ok:
        return -1
    q = {i: len(views[i]["waiting"]) + placed.get(i, (0, 0))[0] for i in ok}
    qmin, qmax = min(q.values()), max(q.values())
    best, best_score = -1, -1.0
    for i in ok:
        v = views[i]
        queue = 1.0 if qmax == qmin else (qmax - q[i]) / (qmax - qmin)
        total = v["kv_blocks_total"]
        kv = 1.0 - ((1.0 - v["kv_blocks_free"] / total) if total > 0 else 0.0)
        prefix = (v["cached"] // v["block_size"]) / prompt_blocks if prompt_blocks else 0.0
        score = w_prefix * prefix + w_queue * queue + w_kv * kv
        if score > best_score:
            best, best_score = i, score
    return best


def kv_router_cost(prompt_len: int, v, placed_tokens: int = 0, overlap_weight: float = 1.0) -> float:
    bs = v["block_size"]
    prefill = float(prompt_len - v["cached"]) + float(placed_tokens)
    active = float(_blocks(prompt_len, bs)) + placed_tokens / bs
    for s in list(v["running"]) + list(v["waiting"]):
        if _in_prefill(s):
            prefill += _num_tokens(s) - s["computed"]
        active += _blocks(_num_tokens(s), bs)
    return overlap_weight * prefill / bs + active


def kv_router_choose(prompt_len: int, views, placed=None, overlap_weight: float = 1.0) -> int:
    placed = placed or {}
    best, best_cost = -1, 0.0
    for i, v in enumerate(views):
        if not v["accepting"]:
            continue
        c = kv_router_cost(prompt_len, v, placed.get(i, (0, 0))[1], overlap_weight)
        if best < 0 or c < best_cost:
            best, best_cost = i, c
    return best
