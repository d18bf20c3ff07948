"""vLLM's KV-cache events, router side (precise prefix mode): vLLM's block-hash
scheme reproduced exactly, the event batches decoded defensively, and one backend's real
block set kept from them.

vLLM (0.32, ``v1/core/kv_cache_utils.py``) keys a full block of ``block_size`` tokens by
``hash_fn((parent_hash, tuple(token_ids), extra_keys))`` with ``parent_hash = NONE_HASH`` for
block 0, where ``NONE_HASH = hash_fn(seed)`` and seed is ``$PYTHONHASHSEED`` if set, else
``"vllm-none-hash"``; ``hash_fn`` is ``--prefix-caching-hash-algo``: ``sha256`` (default:
sha256 of ``pickle.dumps(x, HIGHEST_PROTOCOL)``) or ``sha256_cbor`` (sha256 of canonical
CBOR). ``extra_keys`` is None for plain text prompts (no LoRA, multimodal, cache salt).
Events (``--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", ...}'``)
arrive as ZMQ multipart ``(topic, seq: 8 bytes big-endian, payload)``, payload a msgpack
``KVEventBatch`` ``[ts, [event, ...], dp_rank?]``, each event tagged ``BlockStored`` /
``BlockRemoved`` / ``AllBlocksCleared`` with block hashes as 64-bit ints (the low 8 bytes,
big-endian: vLLM 0.32's default, ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1``) or as bytes
(``=0``); the router keys both forms alike (``block_key``).

A stream that stops, lags (a sequence gap) or sends garbage marks the set stale; a stale set
answers nothing, so the router falls back to its approximate index (never an error).

Blocks in flight: the events name a block only once the engine has computed it, so a prompt
the router has just sent is invisible until its prefill is done, and a session's next turn
that comes sooner is routed as if nothing were cached. As Dynamo's KV router does, the view
the policies read (``lookup``) also holds the blocks of every prompt sent to this engine and
not yet finished (``learn(..., rid)`` / ``release(rid)``), whatever the events say of them.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import time
from collections import OrderedDict

log = logging.getLogger("slocore.serve.kv_events")

DEFAULT_SEED = "vllm-none-hash"


def _sha256_pickle(x) -> bytes:
    return hashlib.sha256(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def _sha256_cbor(x) -> bytes:
    import cbor2

    return hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()


HASH_FNS = {"sha256": _sha256_pickle, "sha256_cbor": _sha256_cbor}


class VllmBlockHasher:
    """vLLM's chained block hashes of a token-id prompt (full blocks only)."""

    def __init__(self, block_size: int = 16, algo: str = "sha256", seed: str | None = None, int_hashes: bool = False):
        if algo not in HASH_FNS:
            raise ValueError(f"prefix.hash_algo: must be one of {sorted(HASH_FNS)}, got {algo!r}")
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"prefix.block_size: must be an integer >= 1, got {block_size!r}")
        self.block_size, self.fn, self.int_hashes = block_size, HASH_FNS[algo], int_hashes
        self.none_hash = self.fn(DEFAULT_SEED if seed is None else seed)

    def chain(self, token_ids, max_blocks: int | None = None) -> list:
        out, parent, bs = [], self.none_hash, self.block_size
        n = len(token_ids) // bs
        if max_blocks is not None:
            n = min(n, max_blocks)
        for b in range(n):
            parent = self.fn((parent, tuple(token_ids[b * bs : (b + 1) * bs]), None))
            out.append(parent)
        return [self.external(h) for h in out]

    def external(self, h: bytes):
        """As the events carry it (vLLM's ``maybe_convert_block_hash``)."""
        return int.from_bytes(h, "big") & ((1 << 64) - 1) if self.int_hashes else h


def decode_batch(payload: bytes):
    """(ts, [(kind, hashes)]) of one msgpack KVEventBatch; ValueError naming what is wrong."""
    import msgspec

    try:
        obj = msgspec.msgpack.decode(payload)
    except Exception as e:  # noqa: BLE001 - any decoding error is garbage
        raise ValueError(f"kv event batch: not msgpack ({type(e).__name__})") from None
    if not isinstance(obj, (list, tuple)) or len(obj) < 2 or not isinstance(obj[1], list):
        raise ValueError("kv event batch: expected [ts, [events], ...]")
    ts, events = obj[0], []
    for i, ev in enumerate(obj[1]):
        if isinstance(ev, dict):
            kind, hashes = ev.get("type"), ev.get("block_hashes", [])
        elif isinstance(ev, (list, tuple)) and ev:  # array-like tagged form: [tag, fields...]
            kind, hashes = ev[0], (ev[1] if len(ev) > 1 else [])
        else:
            raise ValueError(f"kv event batch: events[{i}]: not an event")
        if kind not in ("BlockStored", "BlockRemoved", "AllBlocksCleared"):
            raise ValueError(f"kv event batch: events[{i}].type: unknown {kind!r}")
        if not isinstance(hashes, list) or not all(isinstance(h, (bytes, int)) for h in hashes):
            raise ValueError(f"kv event batch: events[{i}].block_hashes: not a list of hashes")
        events.append((kind, hashes))
    return ts, events


def block_key(h) -> int:
    """One key for both forms of a vLLM block hash: a 32-byte hash as its low 8 bytes, big-endian
    (vLLM's ``maybe_convert_block_hash``), an int (that form already) as itself. vLLM 0.32
    publishes the int form unless ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0``; keying both the
    same way makes the router indifferent to that setting (a 2^-64 collision chance)."""
    return int.from_bytes(h[-8:], "big") if isinstance(h, bytes) else int(h)


class KvBlockSet:
    """One backend's cached blocks as its KV events say; stale -> answers 0 (fall back).
    Blocks and translations are keyed by ``block_key`` (either hash form)."""

    def __init__(self, name: str, max_silence_s: float | None = None, max_blocks: int = 1 << 22):
        self.name, self.max_silence_s, self.max_blocks = name, max_silence_s, max_blocks
        self.blocks: set = set()
        self.last_seq: int | None = None
        self.last_event = 0.0
        self.stale = True  # until the first good batch
        self.errors = 0
        # what arrived (the router logs it: proof that precise mode sees the engine's blocks)
        self.counts = {"batches": 0, "stored": 0, "removed": 0, "cleared": 0}
        self._last_report = 0.0
        # vLLM hash -> slocore chain hash, learned from what the router sent (LRU-bounded), and
        # the held blocks in slocore hashes: the C++ BlockSet behind InstanceView.prefix_cache.
        self.translate: OrderedDict = OrderedDict()
        from slocore import _core

        self.lookup = _core.BlockSet()
        # prompts sent here and not finished: request id -> its (vLLM key, slocore hash) blocks,
        # and how many of them reference each slocore hash (they stay in `lookup` meanwhile)
        self.inflight: dict = {}
        self.inflight_refs: dict = {}

    def learn(self, vllm_chain, slocore_chain, rid=None) -> None:
        """The router sent a prompt whose vLLM block hashes are `vllm_chain` and whose slocore
        chain is `slocore_chain` (same token ids, same block size); with `rid`, its blocks count
        as held until `release(rid)` (in flight: the engine computes them)."""
        pairs = []
        for v, c in zip(vllm_chain, slocore_chain):
            v = block_key(v)
            self.translate[v] = c
            self.translate.move_to_end(v)
            pairs.append((v, c))
        while len(self.translate) > self.max_blocks:
            self.translate.popitem(last=False)
        if rid is not None and pairs and rid not in self.inflight:  # every block, in flight
            self.inflight[rid] = pairs
            for _, c in pairs:
                self.inflight_refs[c] = self.inflight_refs.get(c, 0) + 1
            held = [c for _, c in pairs]
        else:  # the blocks the engine already holds
            held = [c for v, c in pairs if v in self.blocks]
        if held:
            self.lookup.add(held)

    def release(self, rid) -> None:
        """The request `rid` sent here is done (finished, failed or cancelled): its blocks are
        held again only if the events say so."""
        pairs = self.inflight.pop(rid, None)
        if not pairs:
            return
        gone = []
        for v, c in pairs:
            n = self.inflight_refs.get(c, 0) - 1
            if n > 0:
                self.inflight_refs[c] = n
                continue
            self.inflight_refs.pop(c, None)
            if v not in self.blocks:
                gone.append(c)
        if gone:
            self.lookup.remove(gone)

    def _mapped(self, keys) -> list:
        return [self.translate[k] for k in keys if k in self.translate]

    def _clear(self) -> None:
        self.blocks.clear()
        self.lookup.clear()
        if self.inflight_refs:  # prompts in flight: the engine computes them again
            self.lookup.add(list(self.inflight_refs))

    def _bad(self, why: str) -> None:
        self.errors += 1
        if not self.stale:
            log.warning("backend %s: KV events %s; using the approximate prefix index", self.name, why)
        self.stale = True

    def apply(self, seq_bytes: bytes, payload: bytes, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        try:
            seq = int.from_bytes(seq_bytes, "big")
            _, events = decode_batch(payload)
        except (ValueError, TypeError) as e:
            return self._bad(f"garbage ({e})")
        if self.last_seq is not None and seq != self.last_seq + 1:
            # A gap: blocks were stored or removed that we did not see; start over from empty.
            self._clear()
            self._bad(f"sequence gap ({self.last_seq} -> {seq})")
        self.last_seq, self.last_event = seq, now
        self.counts["batches"] += 1
        for kind, hashes in events:
            hashes = [block_key(h) for h in hashes]
            if kind == "BlockStored":
                self.blocks.update(hashes)
                self.lookup.add(self._mapped(hashes))
                self.counts["stored"] += len(hashes)
            elif kind == "BlockRemoved":
                self.blocks.difference_update(hashes)
                self.lookup.remove([c for c in self._mapped(hashes) if c not in self.inflight_refs])
                self.counts["removed"] += len(hashes)
            else:
                self._clear()
                self.counts["cleared"] += 1
        if len(self.blocks) > self.max_blocks:  # a runaway stream: bounded memory
            self._clear()
            return self._bad(f"more than {self.max_blocks} blocks")
        if self.stale and self.last_seq is not None:
            log.info("backend %s: KV events live (seq %d)", self.name, seq)
        self.stale = False
        if now - self._last_report >= self.REPORT_EVERY_S:
            self.report()
            self._last_report = now

    REPORT_EVERY_S = 5.0

    def report(self) -> None:
        """One log line: the events so far and the blocks the policies can see."""
        c = self.counts
        log.info(
            "backend %s: KV events: %d batches, %d blocks stored, %d removed, %d cleared; "
            "%d blocks held, %d of them known to the router (seen by precise policies)",
            self.name,
            c["batches"],
            c["stored"],
            c["removed"],
            c["cleared"],
            len(self.blocks),
            len(self.lookup),
        )

    def fresh(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if not self.stale and self.max_silence_s is not None and now - self.last_event > self.max_silence_s:
            self._bad(f"silent for {now - self.last_event:.0f} s")
        return not self.stale

    def match_blocks(self, chain, now: float | None = None) -> int | None:
        """Leading blocks of vLLM chain `chain` held; None when stale (use the approximate index)."""
        if not self.fresh(now):
            return None
        n = 0
        while n < len(chain) and block_key(chain[n]) in self.blocks:
            n += 1
        return n


async def subscribe(block_set: KvBlockSet, endpoint: str, topic: str = "", stop=None) -> None:
    """Follow one backend's ZMQ publisher (vLLM's ``--kv-events-config`` endpoint, e.g.
    ``tcp://127.0.0.1:5557``) into `block_set` until cancelled or `stop` (an asyncio.Event)
    is set. Malformed frames mark the set stale (a log line); socket errors end the loop with
    a log line and leave the set stale; nothing is raised to the caller."""
    import asyncio

    try:
        import zmq
        import zmq.asyncio
    except ImportError:
        log.warning("backend %s: pyzmq is not installed; KV events off (approximate index)", block_set.name)
        return
    ctx = zmq.asyncio.Context.instance()
    sock = ctx.socket(zmq.SUB)
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        while stop is None or not stop.is_set():
            try:
                frames = await asyncio.wait_for(sock.recv_multipart(), 0.5)
            except asyncio.TimeoutError:
                continue
            if len(frames) != 3:
                block_set._bad(f"a message of {len(frames)} frames (want topic, seq, payload)")
                continue
            block_set.apply(frames[1], frames[2])
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - a dead stream degrades, never fails a request
        block_set._bad(f"stream ended ({type(e).__name__}: {e})")
    finally:
        block_set.report()
        sock.close(0)
