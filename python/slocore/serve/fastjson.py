"""JSON on the router's data path: orjson when installed (the serve extra lists it), else the
standard library. ``loads`` reads the engine's chunks (only to count tokens: the client gets
the engine's own bytes) and falls back to ``json`` for whatever orjson refuses. ``loads_exact``
reads a client's body (``limits.read_body``): the standard library's values and errors, through
orjson where that gives the same (no run of 19 or more digits, which could be an integer
beyond 64 bits that orjson would turn into a float). ``dumps`` (the body sent to the engine)
falls back for what orjson cannot encode (integers beyond 64 bits); both write the same
values."""

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


# Every digit becomes "0", every other byte " ": a run of 19+ digits is then a plain substring
# search (two C passes over the body, ~10x cheaper than the regex [0-9]{19} on a body of
# token ids, where every position starts a short run the regex must try).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_RUN_19 = b"0" * 19


def has_long_digit_run(data: bytes) -> bool:
    """`data` holds 19 or more consecutive ASCII digits (an integer orjson might not keep)."""
    return _RUN_19 in data.translate(_DIGITS_AS_ZERO)


def loads_exact(data: bytes, **json_kwargs):
    """``json.loads(data, **json_kwargs)``, faster: orjson for a body without a run of 19+
    digits (a prompt of 2,000 token ids: ~60 us against ~190 us), else, and for whatever
    orjson refuses (NaN, lone surrogates, other encodings), the standard library."""
    if _orjson is not None and not has_long_digit_run(data):
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(data, **json_kwargs)


def dumps(obj) -> bytes:
    if _orjson is not None:
        try:
            return _orjson.dumps(obj)
        except TypeError:  # e.g. an integer beyond 64 bits
            pass
    return json.dumps(obj).encode()
