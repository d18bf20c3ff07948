"""Argument types shared by every `slocore` command: comma-separated lists checked where
they are typed, so that a bad value stops the command before it runs anything (a negative
seed used to fail inside numpy after the matrix had probed its capacities)."""

from __future__ import annotations

import argparse
import math


def names(s: str) -> list[str]:
    """`a,b,c` -> ['a', 'b', 'c'] (blanks dropped; at least one name)."""
    out = [x.strip() for x in s.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {s!r}")
    return out


def seeds(s: str) -> list[int]:
    """Comma-separated seeds: integers >= 0 (numpy's generators take no negative seed)."""
    try:
        out = [int(x) for x in names(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integer seeds, got {s!r}") from None
    if any(x < 0 for x in out):
        raise argparse.ArgumentTypeError(f"seeds must be >= 0, got {s!r}")
    return out


def positive_floats(s: str) -> list[float]:
    """Comma-separated numbers, each finite and > 0 (loads, rates)."""
    try:
        out = [float(x) for x in names(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None
    if not all(math.isfinite(x) and x > 0 for x in out):
        raise argparse.ArgumentTypeError(f"expected finite numbers > 0, got {s!r}")
    return out
