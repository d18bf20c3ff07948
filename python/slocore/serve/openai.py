"""OpenAI request parsing shared by the router and the emulated engine.

Validation raises ``BadRequest`` (-> HTTP 400 with the message) naming the field.
"""

from __future__ import annotations

import json
import math
import time
import uuid

from slocore import _core


class BadRequest(ValueError):
    """A malformed client request: the router and engine answer 4xx with this message."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def error_body(message: str, status: int, type_: str = "invalid_request_error", param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": status}, "object": "error"}


def parse_json(raw: bytes) -> dict:
    try:
        body = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(f"body: not valid JSON ({e})") from None
    if not isinstance(body, dict):
        raise BadRequest("body: must be a JSON object")
    return body


def _int_field(body: dict, key: str, default=None, lo: int = 0):
    v = body.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise BadRequest(f"{key}: must be an integer >= {lo}, got {v!r}")
    return v


def all_token_ids(p: list) -> bool:
    """Every item of list `p` is an int (not a bool, not a float): one pass in C (a generator
    of isinstance checks cost about 0.1 ms per thousand ids). The router reads a prompt once,
    with ``token_ids`` (C++); this is its Python way, for ids beyond 64 bits."""
    return not p or set(map(type, p)) == {int}


class TokenIds:
    """A prompt given as token ids, read once per request (``token_ids``): the ids (the list,
    or the one list of a one-element list), the smallest and largest (the vocabulary check)
    and the prefix segments for `block_size` / `max_blocks` (None: not computed here)."""

    __slots__ = ("ids", "lo", "hi", "segments", "block_size", "max_blocks")

    def __init__(self, ids: list, lo: int, hi: int, segments, block_size: int, max_blocks: int):
        self.ids, self.lo, self.hi, self.segments = ids, lo, hi, segments
        self.block_size, self.max_blocks = block_size, max_blocks


UNSET = object()  # a TokenIds argument not given: the function reads the body itself


def token_ids(body: dict, block_size: int = 16, max_blocks: int = 0) -> TokenIds | None:
    """The body's ``prompt`` as token ids (a non-empty list of ints, not bools nor floats, or a
    one-element list holding one), else None. One C++ pass (``_core.token_id_prompt``) checks
    the items and gives the bounds and `max_blocks` prefix segments
    (``id_block_segments(ids, block_size, block_size, max_blocks)``); ids beyond 64 bits take
    the Python way (no segments). The router's field checks, prompt length and prefix identity
    all read the result: a long prompt is read once, not three times."""
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], list):
        p = p[0]
    if not isinstance(p, list) or not p:
        return None
    got = _core.token_id_prompt(p, block_size, max_blocks)
    if got is not None:
        return TokenIds(p, got[0], got[1], got[2], block_size, max_blocks)
    if all_token_ids(p):  # ints beyond 64 bits: still token ids (the vocabulary check names them)
        return TokenIds(p, min(p), max(p), None, block_size, max_blocks)
    return None


def prompt_tokens(body: dict, chat: bool, tids=UNSET) -> int:
    """Approximate prompt length in tokens (exact for token-id prompts). `tids`: the body's
    ``token_ids``, when the caller has it."""
    if not chat and "prompt" in body and not isinstance(body["prompt"], str):
        if tids is UNSET:
            tids = token_ids(body)
        if tids is not None:
            return len(tids.ids)
    return _prompt_tokens(body, chat)


def _prompt_tokens(body: dict, chat: bool) -> int:
    """Approximate prompt length in tokens (exact for token-id prompts)."""
    if chat:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise BadRequest("messages: must be a non-empty list")
        n = 0
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or "role" not in m:
                raise BadRequest(f"messages[{i}]: must be an object with 'role' and 'content'")
            c = m.get("content", "")
            if isinstance(c, list):  # content parts
                c = " ".join(p["text"] for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
            if c is None:  # an assistant message with tool calls and no text
                c = ""
            if not isinstance(c, str):
                raise BadRequest(f"messages[{i}].content: must be a string or a list of parts")
            n += 4 + _text_tokens(c)
        return max(1, n)
    if "prompt" not in body:
        raise BadRequest("prompt: missing")
    p = body["prompt"]
    if isinstance(p, str):
        return max(1, _text_tokens(p))
    if isinstance(p, list) and p and all_token_ids(p):
        return len(p)
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], (str, list)):
        return _prompt_tokens({"prompt": p[0]}, False)
    raise BadRequest("prompt: must be a string, a list of token ids, or a one-element list of either")


EXACT_COUNT_CHARS = 65536  # longer texts are estimated from their length (bounded work per request)


def _text_tokens(s: str) -> int:
    # ~4 characters per token, at least one per word: a stand-in for a tokenizer.
    if len(s) > EXACT_COUNT_CHARS:
        return math.ceil(len(s) / 4)
    return max(len(s.split()), math.ceil(len(s) / 4))


def common_fields(body: dict) -> dict:
    """Validate the fields every endpoint shares; returns max_tokens and stream."""
    # >= 0: max_tokens=0 is the engine's to refuse, with its own error body
    max_tokens = _int_field(body, "max_tokens", None, 0)
    if max_tokens is None:
        max_tokens = _int_field(body, "max_completion_tokens", None, 0)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(f"stream: must be a boolean, got {stream!r}")
    n = _int_field(body, "n", 1, 1)
    return {"max_tokens": max_tokens, "stream": stream, "n": n}


def new_id(chat: bool) -> str:
    return ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]


def chunk(rid: str, model: str, chat: bool, text: str, index: int = 0, finish=None, first: bool = False) -> dict:
    created = int(time.time())
    if chat:
        delta = {"content": text}
        if first:
            delta["role"] = "assistant"
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        }
    return {
        "id": rid,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"index": index, "text": text, "logprobs": None, "finish_reason": finish}],
    }


def full_response(
    rid: str, model: str, chat: bool, texts: list, finishes: list, usage: dict | None, extra: dict | None = None
) -> dict:
    created = int(time.time())
    if chat:
        choices = [
            {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": f}
            for i, (t, f) in enumerate(zip(texts, finishes))
        ]
        out = {"id": rid, "object": "chat.completion", "created": created, "model": model, "choices": choices}
    else:
        choices = [
            {"index": i, "text": t, "logprobs": None, "finish_reason": f}
            for i, (t, f) in enumerate(zip(texts, finishes))
        ]
        out = {"id": rid, "object": "text_completion", "created": created, "model": model, "choices": choices}
    if usage is not None:
        out["usage"] = usage
    if extra:
        out.update(extra)
    return out


def sse(obj) -> bytes:
    if isinstance(obj, str):
        return f"data: {obj}\n\n".encode()
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def jsonable(x):
    """`x` with non-finite floats as None (JSON has no NaN/inf) and dict keys as strings."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
