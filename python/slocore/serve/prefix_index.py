"""The router's approximate prefix index, live: the prompt of each request becomes prefix
segments (``Request.prefix``, one per block; ``slocore.id_block_segments``) so that policies
compute the same chained block hashes as in the simulator (``prompt_block_hashes``), and each
backend keeps a ``slocore.ApproxPrefixIndex`` (C++, LRU, bounded) of the chains the router
sent there, exposed as ``InstanceView.prefix_index``. Every policy then reads the cached-prefix
length with ``InstanceView.cached_prefix_tokens(request)`` exactly as in the simulator.

Identity of a prompt:
- tokenizer configured (``prefix.tokenizer``: a local ``tokenizer.json`` path, a directory
  holding one, or a Hugging Face hub name already in the local cache): the Hugging Face
  ``tokenizers`` ids of the prompt text, one segment per ``block_size`` tokens (a prompt
  given as token ids uses those ids, with or without a tokenizer);
- no tokenizer (or one that fails to load): the text-block fallback. The prompt text is cut
  into fixed blocks of ``chars_per_block`` characters (default 4 * block_size, the ~4
  characters per token the router's length estimate assumes), each standing for
  ``block_size`` tokens. Two prompts then share blocks while their texts agree character by
  character, block by block; a block's token count is an estimate, so hit lengths are too.
A chat prompt is the concatenation of its messages as ``role\\ncontent\\n`` (no chat
template: equal message lists give equal text, which is all identity needs).

Bounded work: at most ``max_prompt_blocks`` blocks per prompt are hashed (identity of a huge
prompt stops there; the policies see no cache beyond it), and a prompt text is cut to
``max_prompt_blocks * chars_per_block`` characters before tokenising. Any failure turns into
"no identity" for that request plus one log line, never a failed request.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass

from slocore import _core as _s
from slocore.serve.openai import UNSET, all_token_ids

log = logging.getLogger("slocore.serve.prefix")


@dataclass
class PrefixConfig:
    enabled: bool = True
    tokenizer: str | None = None  # path or hub name; None: text-block fallback
    block_size: int = 16  # tokens per block (vLLM's default)
    chars_per_block: int | None = None  # text fallback; default 4 * block_size
    max_prompt_blocks: int = 8192  # blocks hashed per prompt (131k tokens at 16)
    index_capacity_blocks: int = 1 << 20  # per backend, LRU beyond
    hash_algo: str = "sha256"  # vLLM's --prefix-caching-hash-algo (precise mode, serve.kv_events)
    hash_seed: str | None = None  # vLLM's PYTHONHASHSEED if it sets one

    def __post_init__(self):
        for k in ("block_size", "max_prompt_blocks", "index_capacity_blocks"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"prefix.{k}: must be an integer >= 1, got {v!r}")
        if self.chars_per_block is None:
            self.chars_per_block = 4 * self.block_size
        if (
            not isinstance(self.chars_per_block, int)
            or isinstance(self.chars_per_block, bool)
            or self.chars_per_block < 1
        ):
            raise ValueError(f"prefix.chars_per_block: must be an integer >= 1, got {self.chars_per_block!r}")
        if self.hash_algo not in ("sha256", "sha256_cbor"):
            raise ValueError(f"prefix.hash_algo: must be sha256 or sha256_cbor, got {self.hash_algo!r}")
        if self.tokenizer is not None and not isinstance(self.tokenizer, str):
            raise ValueError(f"prefix.tokenizer: must be a path or name, got {self.tokenizer!r}")


def load_tokenizer(spec: str):
    """A ``tokenizers.Tokenizer`` from a tokenizer.json path, a directory holding one, or a
    hub name (local cache only: the router never downloads). None, with a log line, if not."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        log.warning("prefix.tokenizer=%r: the 'tokenizers' package is not installed; using text blocks", spec)
        return None
    try:
        path = os.path.join(spec, "tokenizer.json") if os.path.isdir(spec) else spec
        if os.path.isfile(path):
            return Tokenizer.from_file(path)
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(spec, "tokenizer.json")
        if isinstance(cached, str):
            return Tokenizer.from_file(cached)
        raise FileNotFoundError("neither a tokenizer.json file/directory nor in the local Hugging Face cache")
    except Exception as e:  # noqa: BLE001 - a bad tokenizer must not stop the router
        log.warning("prefix.tokenizer=%r: cannot load (%s: %s); using text blocks", spec, type(e).__name__, e)
        return None


def prompt_text(body: dict, chat: bool):
    """The prompt as text, or as a list of token ids; None when the body has neither."""
    if chat:
        parts = []
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                return None
            c = m.get("content", "")
            if isinstance(c, list):
                c = " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
            parts.append(f"{m.get('role', '')}\n{c}\n")
        return "".join(parts)
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], (str, list)):
        p = p[0]
    if isinstance(p, str):
        return p
    if isinstance(p, list) and all_token_ids(p):
        return p
    return None


class PromptIdentity:
    """Prompt -> ``Request.prefix`` segments; the per-backend indexes."""

    def __init__(self, cfg: PrefixConfig | None = None):
        self.cfg = cfg or PrefixConfig()
        self.tokenizer = load_tokenizer(self.cfg.tokenizer) if self.cfg.tokenizer else None
        self.mode = "tokenizer" if self.tokenizer is not None else "text-blocks"
        self._warned = False
        # request id -> the prompt's exact token ids (precise mode learns vLLM's hashes of them)
        self.exact_ids: OrderedDict = OrderedDict()
        self.max_exact = 4096

    def _keep(self, rid, ids) -> None:
        if rid is None:
            return
        self.exact_ids[rid] = ids
        while len(self.exact_ids) > self.max_exact:
            self.exact_ids.popitem(last=False)

    def max_blocks(self) -> int:
        """The blocks ``segments`` hashes per prompt (0 when identity is off): what
        ``openai.token_ids`` is asked for, so that ``segments`` can take its result."""
        return self.cfg.max_prompt_blocks if self.cfg.enabled else 0

    def segments(self, body: dict, chat: bool, rid=None, tids=UNSET) -> list:
        """(group, len) segments of the prompt; [] (no identity) on any failure. With `rid`,
        exact token ids (token-id prompts; completions text through the tokenizer, special
        tokens added as vLLM does) are kept for precise mode (``exact_ids``). `tids`: the
        body's ``openai.token_ids``, when the caller has it (its segments are used when they
        were made for this identity's block size and block limit)."""
        if not self.cfg.enabled:
            return []
        c = self.cfg
        if (
            not chat
            and tids is not UNSET
            and tids is not None
            and tids.segments is not None
            and (tids.block_size, tids.max_blocks) == (c.block_size, c.max_prompt_blocks)
        ):
            self._keep(rid, tids.ids)
            return tids.segments
        try:
            p = prompt_text(body, chat)
            if p is None:
                return []
            if isinstance(p, list):  # token ids: exact
                self._keep(rid, p)
                return _s.id_block_segments(
                    p[: c.max_prompt_blocks * c.block_size], c.block_size, c.block_size, c.max_prompt_blocks
                )
            if self.tokenizer is not None:
                ids = self.tokenizer.encode(
                    p[: c.max_prompt_blocks * c.chars_per_block], add_special_tokens=not chat
                ).ids
                if not chat:  # chat: vLLM applies the model's chat template; no exact ids
                    self._keep(rid, ids)
                return _s.id_block_segments(ids, c.block_size, c.block_size, c.max_prompt_blocks)
            chars = [ord(ch) for ch in p[: c.max_prompt_blocks * c.chars_per_block]]
            return _s.id_block_segments(chars, c.chars_per_block, c.block_size, c.max_prompt_blocks)
        except Exception as e:  # noqa: BLE001 - identity is an optimisation, never a failure
            if not self._warned:
                log.warning("prefix identity failed (%s: %s); request routed without it", type(e).__name__, e)
                self._warned = True
            return []

    def vllm_hasher(self):
        if getattr(self, "_hasher", None) is None:
            from slocore.serve.kv_events import VllmBlockHasher

            self._hasher = VllmBlockHasher(self.cfg.block_size, self.cfg.hash_algo, self.cfg.hash_seed)
        return self._hasher

    def new_index(self):
        return _s.ApproxPrefixIndex(self.cfg.index_capacity_blocks) if self.cfg.enabled else None


def record_sent(backend, req, identity: PromptIdentity | None = None) -> None:
    """The router sent `req` to `backend`: its prompt chain enters the backend's index, and,
    with KV events on and the prompt's exact ids known, the backend's vLLM-hash translation."""
    idx = getattr(backend, "prefix_index", None)
    if not req.prefix or (idx is None and getattr(backend, "kv_events", None) is None):
        return
    chain = _s.prompt_block_hashes(req, backend.block_size)
    if idx is not None:
        idx.record(chain)
    kv = getattr(backend, "kv_events", None)
    if kv is None or identity is None:
        return
    ids = identity.exact_ids.get(req.id)
    if ids is None or backend.block_size != identity.cfg.block_size:
        return
    try:
        kv.learn(identity.vllm_hasher().chain(ids, len(chain)), chain, req.id)
    except Exception as e:  # noqa: BLE001 - precise mode is an optimisation
        log.warning("backend %s: KV-event translation failed (%s: %s)", backend.name, type(e).__name__, e)


def release_sent(backend, req) -> None:
    """`req` sent to `backend` is done: its prompt no longer counts as in flight there."""
    kv = getattr(backend, "kv_events", None)
    if kv is not None:
        kv.release(req.id)
