"""What one request may cost the router, and what a client may see of its internals.

- body: at most ``max_body_bytes`` (413 above), read within ``body_timeout_s`` (408),
  JSON without NaN/Infinity and nested at most ``max_json_depth`` deep (400);
- prompts: counted in bounded work (text beyond ``openai.EXACT_COUNT_CHARS`` is estimated
  from its length, never split in memory); token ids checked against ``vocab_size`` when known;
- labels: SLO classes outside the config's set are counted as ``other`` (bounded series);
- state: the router's recorder keeps at most ``max_records`` requests (``RecordWindow``);
- errors: every response carries ``x-request-id`` (the client's, when it is a sane token,
  else a new one); errors name it and nothing internal — the details go to the log.

    limits: {max_body_bytes: 67108864, body_timeout_s: 30, max_json_depth: 64,
             vocab_size: 32000, max_records: 50000,
             slo_classes: [interactive, batch]}
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Annotated, Optional

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, Strict

import slocore as _s
from slocore.serve import fastjson
from slocore.serve.openai import UNSET, BadRequest, error_body, token_ids

OTHER_CLASS = "other"
ROUTER_OWNED = ("kv_transfer_params",)  # set by the router (P/D) only: a client's is dropped
_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
REQUEST_ID = web.RequestKey("request_id", str) if hasattr(web, "RequestKey") else "request_id"


class LimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_body_bytes: Annotated[int, Strict(), Field(gt=0)] = 64 * 1024 * 1024
    body_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 30.0
    max_json_depth: Annotated[int, Strict(), Field(gt=0, le=1000)] = 64
    vocab_size: Optional[Annotated[int, Strict(), Field(gt=0)]] = None
    max_records: Annotated[int, Strict(), Field(gt=0)] = 50000
    slo_classes: list[str] = Field(default_factory=list)


# --- request ids -------------------------------------------------------------------------
def request_id(request: web.Request) -> str:
    rid = request.get(REQUEST_ID)
    if rid is None:
        sent = request.headers.get("x-request-id", "")
        rid = request[REQUEST_ID] = sent if _ID_RE.match(sent) else os.urandom(16).hex()  # uuid4's 5 us: 1 us
    return rid


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """aiohttp signal: every answer (JSON or SSE) carries the request id."""
    response.headers["x-request-id"] = request_id(request)


def error_response(
    request: web.Request, message: str, status: int, type_: str = "invalid_request_error", headers: dict | None = None
) -> web.Response:
    body = error_body(message, status, type_)
    body["error"]["request_id"] = request_id(request)
    return web.json_response(body, status=status, headers=headers)


_KIND_TEXT = {
    "connection": "connection to the engine lost",
    "http": "the engine answered with an error",
    "protocol": "the engine sent a malformed stream",
    "engine_error": "the engine reported an error",
}


def public_message(e, why: str, request_id: str) -> str:
    """What a client learns of engine failure `e` (a ``BackendError``): the kind, and the
    router's own timeout text, never the engine's name, URL or exception text (logged)."""
    what = e.detail if e.kind == "timeout" else _KIND_TEXT.get(e.kind, "the engine failed")
    return f"{what} ({why}); request id {request_id}"


# --- the body ----------------------------------------------------------------------------
def _reject_constant(name: str):
    raise BadRequest(f"body: {name} is not valid JSON")


def _depth_ok(raw: bytes, limit: int) -> bool:
    """Bracket nesting of `raw` (outside strings) stays <= limit: checked before parsing."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return True
    depth, in_str, esc = 0, False, False
    for c in raw.decode("utf-8", "replace"):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return False
        elif c in "]}":
            depth -= 1
    return True


async def read_body(request: web.Request, lim: LimitsConfig) -> dict:
    """The request's JSON object; BadRequest 413/408/400 naming what is wrong."""
    if request.content_length is not None and request.content_length > lim.max_body_bytes:
        raise BadRequest(f"body: {request.content_length} bytes exceed the limit of {lim.max_body_bytes}", 413)
    try:
        if request.content.is_eof():  # the whole body came with the headers: no timer needed
            raw = await request.read()
        else:
            raw = await asyncio.wait_for(request.read(), lim.body_timeout_s)
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest(f"body: exceeds the limit of {lim.max_body_bytes} bytes", 413) from None
    except asyncio.TimeoutError:
        raise BadRequest(f"body: not received within {lim.body_timeout_s:g} s", 408) from None
    if len(raw) > lim.max_body_bytes:
        raise BadRequest(f"body: {len(raw)} bytes exceed the limit of {lim.max_body_bytes}", 413)
    if not _depth_ok(raw, lim.max_json_depth):
        raise BadRequest(f"body: JSON nested deeper than {lim.max_json_depth} levels")
    try:
        body = fastjson.loads_exact(raw or b"", parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        if isinstance(e, BadRequest):
            raise
        raise BadRequest(f"body: not valid JSON ({type(e).__name__})") from None
    if not isinstance(body, dict):
        raise BadRequest("body: must be a JSON object")
    return body


def check_fields(body: dict, chat: bool, lim: LimitsConfig, tids=UNSET) -> None:
    """Types of the fields the router reads or forwards (the engine would 400 them; we must
    not 500 on them first). `tids`: the body's ``openai.token_ids``, when the caller has it."""
    for key in ("vllm_xargs", "stream_options"):
        v = body.get(key)
        if v is not None and not isinstance(v, dict):
            raise BadRequest(f"{key}: must be an object, got {type(v).__name__}")
    v = body.get("slo_class")
    if v is not None and not isinstance(v, str):  # checked even where a tenant ignores it
        raise BadRequest(f"slo_class: must be a string, got {type(v).__name__}")
    if chat and isinstance(body.get("messages"), list):
        for i, m in enumerate(body["messages"]):
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, list):
                for j, p in enumerate(c):
                    if not isinstance(p, dict):
                        raise BadRequest(f"messages[{i}].content[{j}]: must be an object")
                    if "text" in p and not isinstance(p["text"], str):
                        raise BadRequest(f"messages[{i}].content[{j}].text: must be a string")
    t = token_ids(body) if tids is UNSET else tids
    if t is not None:
        hi = lim.vocab_size
        if t.lo < 0 or (hi is not None and t.hi >= hi):  # the bounds from one pass; the first offender named
            x = next(x for x in t.ids if x < 0 or (hi is not None and x >= hi))
            bound = f"[0, {hi})" if hi is not None else ">= 0"
            raise BadRequest(f"prompt: token id {x} out of range {bound}")


def strip_router_owned(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in ROUTER_OWNED}


# --- bounded label sets and per-request state --------------------------------------------
class ClassLabels:
    """SLO class -> its metrics label: the config's classes (``slo_classes``, the priority
    table's ``priority<p>``, tenants' classes) keep their name, every other is ``other``."""

    def __init__(self, known):
        self.known = set(known)

    def __call__(self, cls: str) -> str:
        return cls if cls in self.known else OTHER_CLASS


class RecordWindow:
    """Keeps the router's ``slocore.Recorder`` at most `max_records` long: when full, a new
    recorder starts with only the requests still in flight (a Recorder cannot drop one)."""

    def __init__(self, router, max_records: int):
        self.r, self.max = router, max_records
        self.live: dict[int, _s.Request] = {}

    def add(self, template) -> None:
        if len(self.r.recorder) >= self.max:
            fresh = _s.Recorder()
            for t in self.live.values():
                fresh.add(t)
            self.r.recorder = fresh
        self.r.recorder.add(template)
        self.live[template.id] = template

    def done(self, rid: int) -> None:
        self.live.pop(rid, None)
