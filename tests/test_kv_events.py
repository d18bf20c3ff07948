"""vLLM KV-event handling without vLLM: decoding, the block set, and every bad stream
(garbage, sequence gaps, runaway size) degrading to "stale" (fall back), never raising."""

import pytest

msgspec = pytest.importorskip("msgspec")

from slocore.serve.kv_events import KvBlockSet, VllmBlockHasher, decode_batch  # noqa: E402


def batch(*events, ts=1.0):
    return msgspec.msgpack.encode([ts, list(events)])


def stored(hs):
    return {
        "type": "BlockStored",
        "block_hashes": hs,
        "parent_block_hash": None,
        "token_ids": [],
        "block_size": 16,
        "lora_id": None,
        "medium": "GPU",
        "lora_name": None,
    }


def seq(n):
    return n.to_bytes(8, "big")


def test_hasher_chains_and_int_form():
    h = VllmBlockHasher(4)
    a, b = h.chain(list(range(10))), h.chain(list(range(8)) + [7, 7, 7, 7])
    assert len(a) == 2 and a == b[:2] and len(b) == 3
    assert h.chain([9] + list(range(1, 8)))[0] != a[0] and h.chain([9] + list(range(1, 8)))[1] != a[1]
    hi = VllmBlockHasher(4, int_hashes=True)
    assert hi.chain(list(range(8))) == [int.from_bytes(x, "big") & (2**64 - 1) for x in a]
    with pytest.raises(ValueError, match="hash_algo"):
        VllmBlockHasher(4, algo="md5")


def test_block_set_follows_events():
    h = VllmBlockHasher(4)
    chain = h.chain(list(range(16)))
    s = KvBlockSet("v0")
    assert s.match_blocks(chain) is None  # nothing heard yet: fall back
    s.apply(seq(0), batch(stored(chain[:3])))
    assert s.match_blocks(chain) == 3
    s.apply(seq(1), batch({"type": "BlockRemoved", "block_hashes": [chain[1]], "medium": "GPU"}))
    assert s.match_blocks(chain) == 1
    s.apply(seq(2), batch({"type": "AllBlocksCleared"}))
    assert s.match_blocks(chain) == 0


def test_prompts_in_flight_count_as_held_until_released():
    # The policies' view (`lookup`, slocore hashes) holds a sent prompt's blocks before its
    # events come (the engine has not prefilled it yet), and after the request ends holds
    # only what the events say the engine keeps.
    h = VllmBlockHasher(4)
    a = h.chain(list(range(16)))  # 4 blocks
    b = h.chain(list(range(8)) + [9] * 8)  # shares a's first 2 blocks
    ca, cb = [100 + i for i in range(4)], [100, 101, 202, 203]
    s = KvBlockSet("v0")
    s.apply(seq(0), batch())  # the stream is live, nothing stored
    s.learn(a, ca, rid=1)
    assert s.lookup.match_blocks(ca) == 4 and s.match_blocks(a) == 0  # in flight, not stored
    s.learn(b, cb, rid=2)
    s.apply(seq(1), batch(stored(a[:3])))  # request 1's first 3 blocks computed
    s.apply(seq(2), batch({"type": "BlockRemoved", "block_hashes": [a[0]], "medium": "GPU"}))
    assert s.lookup.match_blocks(ca) == 4  # evicted but in flight again: still counted
    s.release(1)
    # block 0 removed but in flight for request 2; blocks 1-2 stored; block 3 never was
    assert s.lookup.match_blocks(ca) == 3 and s.lookup.match_blocks(ca[3:]) == 0
    s.apply(seq(3), batch({"type": "AllBlocksCleared"}))
    assert s.lookup.match_blocks(cb) == 4  # request 2 is still in flight
    s.release(2)
    s.release(2)  # twice, or an unknown id: nothing
    assert s.lookup.match_blocks(cb) == 0 and s.lookup.match_blocks(ca) == 0
    assert not s.inflight and not s.inflight_refs


def test_bad_streams_degrade_never_raise(caplog):
    chain = VllmBlockHasher(4).chain(list(range(16)))
    s = KvBlockSet("v0", max_blocks=10)
    s.apply(seq(0), batch(stored(chain)))
    assert s.match_blocks(chain) == 4
    for junk in (
        b"\xc1\xff",
        msgspec.msgpack.encode({"a": 1}),
        batch({"type": "Nope"}),
        batch([1]),
        batch({"type": "BlockStored", "block_hashes": "xx"}),
    ):
        s.apply(seq(1), junk)
        assert s.match_blocks(chain) is None
    assert "garbage" in caplog.text
    s.apply(seq(1), batch(stored(chain)))  # recovers
    assert s.match_blocks(chain) == 4
    s.apply(seq(5), batch(stored(chain[:1])))  # a gap: what we hold may be wrong; restart from this batch
    assert s.match_blocks(chain) == 1 and s.errors >= 1
    s.apply(seq(6), batch(stored([bytes([i]) for i in range(20)])))  # runaway: bounded
    assert s.match_blocks(chain) is None and not s.blocks
    silent = KvBlockSet("v1", max_silence_s=5)
    silent.apply(seq(0), batch(stored(chain)), now=0.0)
    assert silent.match_blocks(chain, now=1.0) == 4 and silent.match_blocks(chain, now=10.0) is None


def test_decode_names_the_problem():
    with pytest.raises(ValueError, match="events\\[0\\].type"):
        decode_batch(batch({"type": "Bogus"}))
    assert decode_batch(batch(stored([b"a"])))[1] == [("BlockStored", [b"a"])]


def test_subscriber_follows_a_zmq_publisher_and_survives_junk():
    import asyncio

    zmq = pytest.importorskip("zmq")
    from slocore.serve.kv_events import subscribe

    chain = VllmBlockHasher(4).chain(list(range(16)))

    async def main():
        pub = zmq.Context.instance().socket(zmq.PUB)
        port = pub.bind_to_random_port("tcp://127.0.0.1")
        s, stop = KvBlockSet("v0"), asyncio.Event()
        task = asyncio.create_task(subscribe(s, f"tcp://127.0.0.1:{port}", stop=stop))
        for i in range(200):  # the slow-joiner: publish until the subscriber hears
            pub.send_multipart([b"", seq(i), batch(stored(chain))])
            await asyncio.sleep(0.02)
            if s.match_blocks(chain) == 4:
                break
        assert s.match_blocks(chain) == 4
        pub.send_multipart([b"only-one-frame"])
        pub.send_multipart([b"", seq(i + 1), b"\xc1garbage"])
        await asyncio.sleep(0.3)
        assert s.match_blocks(chain) is None  # stale: the router falls back
        stop.set()
        await asyncio.wait_for(task, 5)
        pub.close(0)

    asyncio.run(asyncio.wait_for(main(), 30))
