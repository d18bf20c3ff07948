"""JSON on the router's data path: orjson when installed (the serve extra lists it), else the
standard library. ``loads`` reads the engine's chunks (only to count tokens: the client gets
the engine's own bytes) and falls back to ``json`` for whatever orjson refuses; a client's
body is parsed by the standard library (``limits.read_body``: exact big integers, its error
texts). ``dumps`` (the body sent to the engine) falls back for what orjson cannot encode
(integers beyond 64 bits); both write the same values."""

from __future__ import annotations

import json

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - the serve extra installs it
    _orjson = None


def loads(data: bytes | str, **json_kwargs):
    """Parse one JSON document (json_kwargs go to ``json.loads`` on the fallback path)."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # json decides: same result or the same error as without orjson
    return json.loads(data, **json_kwargs)


def dumps(obj) -> bytes:
    if _orjson is not None:
        try:
            return _orjson.dumps(obj)
        except TypeError:  # e.g. an integer beyond 64 bits
            pass
    return json.dumps(obj).encode()
