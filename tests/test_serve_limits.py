"""The router's request limits (serve.limits): 4xx for every malformed request, 413/408 on the
body, bounded labels and per-request state, router-owned fields stripped, error texts that
name nothing internal but carry a request id."""

import asyncio
import json

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.serve import limits  # noqa: E402
from slocore.serve.openai import BadRequest, prompt_tokens  # noqa: E402
from test_serve_router import free_port, run, serving, two_engines  # noqa: E402

MALFORMED = [
    (b'{"prompt": "a", "priority": Infinity}', "Infinity"),
    (b'{"prompt": "a", "priority": NaN}', "NaN"),
    (b'{"prompt": "a", "priority": 1e999}', "priority"),
    (json.dumps({"prompt": "a", "vllm_xargs": [1]}).encode(), "vllm_xargs"),
    (json.dumps({"prompt": "a", "stream_options": "yes"}).encode(), "stream_options"),
    (json.dumps({"prompt": [-1, 5]}).encode(), "token id -1"),
    (json.dumps({"prompt": [[3, 2**40]]}).encode(), "token id"),
    (b'{"prompt": ' + b"[" * 100000 + b"]" * 100000 + b"}", "nested"),
    (b'{"prompt": "a", "x": ' + b"[" * 65 + b"]" * 65 + b"}", "nested"),
    (json.dumps({"prompt": "a", "slo_class": ["x"]}).encode(), "slo_class"),
]


def test_malformed_bodies_get_400_naming_the_field_and_a_request_id():
    async def go():
        d = two_engines()
        d["limits"] = {"vocab_size": 1000}
        async with serving(d) as (router, url, s):
            for raw, needle in MALFORMED:
                async with s.post(url + "/v1/completions", data=raw) as r:
                    body = await r.json()
                    assert r.status == 400, (raw[:60], body)
                    assert needle in body["error"]["message"], (needle, body)
                    assert body["error"]["request_id"] == r.headers["x-request-id"]
            async with s.post(url + "/v1/completions", json={"prompt": [999, 1000]}) as r:
                assert r.status == 400 and "[0, 1000)" in (await r.json())["error"]["message"]
            chat = {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}
            async with s.post(url + "/v1/chat/completions", json=chat) as r:
                assert r.status == 400 and "content[0].text" in (await r.json())["error"]["message"]
            async with s.post(
                url + "/v1/completions",
                json={"prompt": [1, 2, 999], "max_tokens": 2},
                headers={"x-request-id": "abc-123"},
            ) as r:
                assert r.status == 200 and r.headers["x-request-id"] == "abc-123"

    run(go())


def test_body_over_the_limit_is_413_and_a_slow_body_is_408():
    async def go():
        d = two_engines()
        d["limits"] = {"max_body_bytes": 4096, "body_timeout_s": 0.5}
        async with serving(d) as (router, url, s):
            big = json.dumps({"prompt": "x" * 10000}).encode()
            async with s.post(url + "/v1/completions", data=big) as r:
                assert r.status == 413, await r.text()

            async def chunked():  # no content-length: the limit applies while reading
                for _ in range(10):
                    yield b" " * 1000

            async with s.post(url + "/v1/completions", data=chunked()) as r:
                assert r.status == 413
            host, port = url[len("http://") :].split(":")
            rd, wr = await asyncio.open_connection(host, int(port))
            wr.write(b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"pro')
            await wr.drain()
            status = await asyncio.wait_for(rd.readline(), 5)  # answered, not held
            assert b" 408 " in status, status
            wr.close()

    run(go())


def test_router_owned_fields_are_stripped_and_labels_bounded():
    async def go():
        d = two_engines()
        d["limits"] = {"slo_classes": ["gold"]}
        async with serving(d) as (router, url, s):
            # a client's do_remote_decode would stop the engine after its prefill (1 token)
            body = {"prompt": "a b", "max_tokens": 4, "kv_transfer_params": {"do_remote_decode": True}}
            async with s.post(url + "/v1/completions", json=body) as r:
                out = await r.json()
                assert r.status == 200 and out["usage"]["completion_tokens"] == 4, out
                assert out.get("kv_transfer_params") is None  # vLLM's field, empty: no P/D transfer happened
            for cls in ["gold", "x1", "x2", "x3"]:
                async with s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 1, "slo_class": cls}):
                    pass
            async with s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 1, "priority": 77}):
                pass
            async with s.get(url + "/metrics") as r:
                text = await r.text()
            assert 'slo_class="gold"' in text and 'slo_class="other"' in text
            assert "x1" not in text and "priority77" not in text

    run(go())


def test_per_request_records_are_bounded():
    async def go():
        d = two_engines()
        d["limits"] = {"max_records": 5}
        async with serving(d) as (router, url, s):
            for _ in range(12):
                async with s.post(url + "/v1/completions", json={"prompt": "a", "max_tokens": 1}) as r:
                    assert r.status == 200
            assert 1 <= len(router.recorder) <= 5
            assert not router.handler.records.live

    run(go())


def test_engine_failures_name_no_url_backend_or_exception():
    async def go():
        d = two_engines()
        d["backends"] = [{"name": "secret-node", "url": f"http://127.0.0.1:{free_port()}"}]
        d["retries"] = 0
        async with serving(d) as (router, url, s):
            for stream in (False, True):
                async with s.post(url + "/v1/completions", json={"prompt": "a", "stream": stream}) as r:
                    text = await r.text()
                    assert r.status in (502, 503), text
                    for leak in ("127.0.0.1", "http://", "secret-node", "Error"):
                        assert leak not in text, (leak, text)
                    assert r.headers["x-request-id"] in text or r.status == 503

    run(go())


def test_prompt_count_is_bounded_work():
    assert prompt_tokens({"prompt": "ab " * 10}, False) == 10
    n = prompt_tokens({"prompt": "a " * 1_000_000}, False)  # estimated from length, not split
    assert n == 500_000
    with pytest.raises(BadRequest):
        limits.check_fields({"prompt": [0, -3]}, False, limits.LimitsConfig())
    assert limits.strip_router_owned({"a": 1, "kv_transfer_params": {}}) == {"a": 1}


def test_limits_config_errors_name_the_field():
    from slocore.serve import config as cfgmod

    with pytest.raises(ValueError, match="limits.max_body_bytes"):
        cfgmod.from_dict({"limits": {"max_body_bytes": 0}})
    with pytest.raises(ValueError, match="limits.nope"):
        cfgmod.from_dict({"limits": {"nope": 1}})
