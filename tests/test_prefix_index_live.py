"""The approximate prefix index, live: prompt ids -> prefix segments (C++ = Python reference),
the router's tokenizer / text-block identity, bad input falling back, and the per-backend
index feeding InstanceView.cached_prefix_tokens through a real router with emulated engines."""

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slocore import _core
from slocore.reference import prefix as ref

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from slocore.serve.prefix_index import PrefixConfig, PromptIdentity  # noqa: E402
from test_serve_router import run, serving, two_engines  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**63 - 1), max_size=120), st.integers(1, 20), st.integers(1, 20), st.integers(0, 12))
def test_id_block_segments_match_reference(ids, per, toks, cap):
    assert _core.id_block_segments(ids, per, toks, cap) == ref.id_block_segments(ids, per, toks, cap)


def test_id_block_segments_rejects_bad_sizes():
    with pytest.raises(ValueError, match="ids_per_block"):
        _core.id_block_segments([1, 2], 0, 16, 10)
    with pytest.raises(ValueError, match="tokens_per_block"):
        _core.id_block_segments([1, 2], 16, 0, 10)


def chain(segs, bs=16):
    n = sum(k for _, k in segs)
    return _core.prompt_block_hashes(_core.Request(0, 0.0, max(1, n), output_len=1, prefix=segs), bs)


def test_prompts_share_exactly_their_common_id_blocks():
    a = list(range(100))
    b = a[:40] + [999] * 60  # agree on 2 full blocks of 16, then differ inside block 2
    ca, cb = chain(_core.id_block_segments(a, 16, 16, 100)), chain(_core.id_block_segments(b, 16, 16, 100))
    assert len(ca) == len(cb) == 6  # full blocks of the first 99 tokens
    assert ca[:2] == cb[:2] and ca[2] != cb[2]
    # a growing conversation: the longer prompt holds all of the shorter one's blocks
    longer = chain(_core.id_block_segments(a + list(range(500, 560)), 16, 16, 100))
    assert longer[:6] == ca


def test_text_block_fallback_and_caps(caplog):
    ident = PromptIdentity(PrefixConfig(block_size=4, max_prompt_blocks=5))
    assert ident.mode == "text-blocks"
    segs = ident.segments({"prompt": "x" * 16 * 3 + "yz"}, chat=False)  # 16 chars per block
    assert [n for _, n in segs] == [4, 4, 4, 1]
    assert len(ident.segments({"prompt": "a" * 10**6}, chat=False)) == 5  # bounded work
    chat = {"messages": [{"role": "system", "content": "s" * 100}, {"role": "user", "content": "hi"}]}
    other = {"messages": [{"role": "system", "content": "s" * 100}, {"role": "user", "content": "yo"}]}
    sa, sb = ident.segments(chat, True), ident.segments(other, True)
    assert sa[:5] == sb[:5] and sa != sb or len(sa) == 5
    # anything odd: no identity, no exception
    for body in ({"prompt": {"a": 1}}, {"prompt": [1.5]}, {}, {"messages": ["x"]}, {"prompt": "\udcff\x00" * 99}):
        assert isinstance(ident.segments(body, False), list)
        assert isinstance(ident.segments(body, True), list)
    assert ident.segments({"prompt": [[3, 4, 5]]}, False) == _core.id_block_segments([3, 4, 5], 4, 4, 5)


def test_unknown_tokenizer_falls_back_with_a_log_line(caplog):
    with caplog.at_level(logging.WARNING, "slocore.serve.prefix"):
        ident = PromptIdentity(PrefixConfig(tokenizer="/nonexistent/tokenizer.json"))
    assert ident.mode == "text-blocks"
    assert "cannot load" in caplog.text or "not installed" in caplog.text
    assert ident.segments({"prompt": "hello world " * 20}, False)


def test_tokenizer_identity(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {w: i for i, w in enumerate(["[UNK]", "a", "b", "c", "d"])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    ident = PromptIdentity(PrefixConfig(tokenizer=str(tmp_path), block_size=4))
    assert ident.mode == "tokenizer"
    segs = ident.segments({"prompt": "a b c d a b c d a"}, False)
    assert segs == _core.id_block_segments([1, 2, 3, 4, 1, 2, 3, 4, 1], 4, 4, 10**6)


def test_config_validates_prefix_section():
    from slocore.serve import config as cfgmod

    with pytest.raises(ValueError, match="prefix.block_size"):
        cfgmod.from_dict({"prefix": {"block_size": 0}})
    with pytest.raises(ValueError, match="prefix"):
        cfgmod.from_dict({"prefix": {"no_such_key": 1}})
    assert cfgmod.from_dict({"prefix": {"tokenizer": "x", "block_size": 32}}).prefix["block_size"] == 32


def test_router_records_what_it_sent_and_policies_see_it():
    prompt = "You are a careful assistant. " * 40  # ~1200 characters: many blocks

    async def main():
        async with serving(two_engines("kv_router")) as (router, url, s):
            body = {"model": "m", "prompt": prompt, "max_tokens": 2}
            async with s.post(url + "/v1/completions", json=body) as r:
                assert r.status == 200, await r.text()
                await r.read()
            sent = [b for b in router.pool if b.prefix_index is not None and len(b.prefix_index) > 0]
            assert len(sent) == 1  # the chain went to the backend that served it
            req = _core.Request(99, 0.0, 400, output_len=1, prefix=router.prefix.segments(body, False))
            views = {b.name: b.view() for b in router.pool}
            hit = {n: v.cached_prefix_tokens(req) for n, v in views.items()}
            assert hit[sent[0].name] > 0 and sum(hit.values()) == hit[sent[0].name]
            # the cache-aware policy sends the same prompt back to the same backend
            for _ in range(3):
                async with s.post(url + "/v1/completions", json=body) as r:
                    assert r.status == 200
                    await r.read()
            assert sent[0].served == 4
            # garbage prompt content still serves
            async with s.post(
                url + "/v1/completions", json={"model": "m", "prompt": "\x00" * 5000, "max_tokens": 1}
            ) as r:
                assert r.status == 200, await r.text()
                await r.read()

    run(main())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "remove", "clear", "match"]), st.lists(st.integers(0, 30), max_size=8)),
        max_size=40,
    )
)
def test_block_set_matches_reference(ops):
    c, r = _core.BlockSet(), ref.BlockSet()
    for op, hs in ops:
        if op == "clear":
            c.clear(), r.clear()
        elif op == "match":
            assert c.match_blocks(hs) == r.match_blocks(hs)
        else:
            getattr(c, op)(hs), getattr(r, op)(hs)
        assert len(c) == len(r)


def test_precise_mode_from_kv_events_and_fallback():
    """A backend publishing KV events (a stand-in ZMQ publisher speaking vLLM's format):
    its view's prefix_cache holds exactly the published blocks of what the router sent; a
    garbage frame turns precise off (the approximate index answers), never an error."""
    import asyncio

    zmq = pytest.importorskip("zmq")
    msgspec = pytest.importorskip("msgspec")
    from slocore.serve.kv_events import VllmBlockHasher

    pub = zmq.Context.instance().socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    ids = list(range(1000, 1000 + 16 * 20))  # 20 blocks of token ids
    d = two_engines("kv_router")
    d["backends"][0]["kv_events"] = f"tcp://127.0.0.1:{port}"

    async def main():
        async with serving(d) as (router, url, s):
            e0 = next(b for b in router.pool if b.name == "e0")
            assert e0.kv_events is not None and e0.view().prefix_cache is None  # nothing heard: approximate
            body = {"model": "m", "prompt": ids, "max_tokens": 1}
            # send until the policy places it on e0 (round of fallbacks is fine)
            for _ in range(6):
                async with s.post(url + "/v1/completions", json=body) as r:
                    assert r.status == 200, await r.text()
                    await r.read()
                if e0.kv_events.translate:
                    break
            assert e0.kv_events.translate, "the router never sent the prompt to e0"
            vchain = VllmBlockHasher(16).chain(ids)
            req = _core.Request(7, 0.0, len(ids), output_len=1, prefix=router.prefix.segments(body, False))
            for i in range(300):  # vLLM says it holds the first 12 blocks
                pub.send_multipart(
                    [
                        b"",
                        i.to_bytes(8, "big"),
                        msgspec.msgpack.encode(
                            [
                                1.0,
                                [
                                    {
                                        "type": "BlockStored",
                                        "block_hashes": vchain[:12],
                                        "parent_block_hash": None,
                                        "token_ids": ids[:192],
                                        "block_size": 16,
                                        "lora_id": None,
                                        "medium": "GPU",
                                        "lora_name": None,
                                    }
                                ],
                            ]
                        ),
                    ]
                )
                await asyncio.sleep(0.02)
                if e0.view().prefix_cache is not None:
                    break
            v = e0.view()
            assert v.cached_prefix_tokens(req, "precise") == 12 * 16
            assert v.cached_prefix_tokens(req, "approximate") == 19 * 16  # what was sent: all but the last token
            pub.send_multipart([b"", (i + 1).to_bytes(8, "big"), b"\xc1 not msgpack"])
            await asyncio.sleep(0.3)
            v = e0.view()
            assert v.prefix_cache is None and v.cached_prefix_tokens(req) == 19 * 16
            async with s.post(url + "/v1/completions", json=body) as r:
                assert r.status == 200

    try:
        run(main())
    finally:
        pub.close(0)
