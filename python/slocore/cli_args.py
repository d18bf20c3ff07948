"""Argument types shared by every `slocore` command, checked where they are typed, so that a
bad value stops the command before it runs anything (a negative seed used to fail inside
numpy after the matrix had probed its capacities)."""

from __future__ import annotations

import argparse
import json
import math


def names(s: str) -> list[str]:
    """`a,b,c` -> ['a', 'b', 'c'] (blanks dropped; at least one name)."""
    out = [x.strip() for x in s.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {s!r}")
    return out


def _number(s: str, kind, what: str, ok) -> int | float:
    try:
        v = kind(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}")
    return v


def positive_int(s: str) -> int:
    return _number(s, int, "an integer >= 1", lambda v: v >= 1)


def non_negative_int(s: str) -> int:
    return _number(s, int, "an integer >= 0", lambda v: v >= 0)


def positive_float(s: str) -> float:
    return _number(s, float, "a finite number > 0", lambda v: 0 < v < math.inf)


def seeds(s: str) -> list[int]:
    """Comma-separated seeds, integers >= 0 (numpy's generators take no negative seed)."""
    return [_number(x, int, "comma-separated integer seeds >= 0", lambda v: v >= 0) for x in names(s)]


def positive_floats(s: str) -> list[float]:
    """Comma-separated numbers, each finite and > 0 (loads, rates)."""
    return [positive_float(x) for x in names(s)]


def int_in(lo: int, hi: int):
    """An integer in [lo, hi] (a bound the config file's schema has too)."""
    return lambda s: _number(s, int, f"an integer {lo}-{hi}", lambda v: lo <= v <= hi)


def port(s: str) -> int:
    """A TCP port, 0-65535 (0: any free port)."""
    return _number(s, int, "a port number, 0-65535", lambda v: 0 <= v <= 65535)


def json_object(s: str) -> dict:
    """Parameters as a JSON object: `{"margin": 0.1}`."""
    try:
        out = json.loads(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e}): {s!r}") from None
    if not isinstance(out, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {s!r}")
    return out


def http_url(s: str) -> str:
    """An http(s) base URL with a host: `http://127.0.0.1:8000`."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(s)
        u.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL, got {s!r}") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL such as http://127.0.0.1:8000, got {s!r}")
    return s
