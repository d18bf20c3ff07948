"""A request's SLO fields as a vLLM engine receives them: ``vllm_xargs`` in the body, which
vLLM hands on as ``sampling_params.extra_args`` (``slo_ttft_ms``, ``slo_tpot_ms``,
``slo_deadline_ms``, ``priority``, ``task``), and vLLM's own ``priority``. Read the same way
by the vLLM scheduler plugin and by the emulated engine (``slocore engine``).

In P/D the router adds ``slo_handoff_ttft_ms`` to the decode instance's request: the time
from the client's arrival to the prefill instance's first token. A decode engine dates the
request's first token at its own arrival and its client arrival that much earlier, as the
simulator's decode engine sees a handed-off request (first token and arrival from the
prefill side). The router owns the field: a client's value is dropped.

They come from clients, and vLLM checks little of them (only that integers fit 64 bits), so
nothing here raises: a value that cannot be used is left out and returned in ``refused``
for the caller to log."""

from __future__ import annotations

import math

MAX_PRIORITY = 2**31 - 1  # slocore's Request holds an int32 level
MAX_TASK_CHARS = 128  # a task is a label for per-task statistics
MS_FIELDS = (("slo_ttft_ms", "ttft"), ("slo_tpot_ms", "tpot"), ("slo_deadline_ms", "deadline"))
HANDOFF_TTFT_FIELD = "slo_handoff_ttft_ms"  # P/D: the TTFT taken on the prefill side (router-owned)
MAX_HANDOFF_TTFT_MS = 86_400_000.0  # a day: anything longer is not a handoff


def _number(v) -> float | None:
    """A client's number (a numeric string too), never a bool; None when it is not one."""
    if isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return None


def _positive_ms(v) -> float | None:
    x = _number(v)
    return x if x is not None and math.isfinite(x) and x > 0 else None


def _handoff_ms(v) -> float | None:
    x = _number(v)
    return x if x is not None and 0 <= x <= MAX_HANDOFF_TTFT_MS else None


def _level(v) -> int | None:
    """An integer priority (an integral float or numeric string too), clamped to
    [0, MAX_PRIORITY]: negative values (vLLM allows them, lower runs first) are level 0."""
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        return None
    return min(max(v, 0), MAX_PRIORITY)


def slo_fields(extra_args, native_priority=0) -> tuple[dict, list[tuple[str, object]]]:
    """(fields, refused). `fields` holds ``ttft``, ``tpot``, ``deadline`` (seconds) where the
    client gave a usable value, and always ``priority`` (the extra arg, else
    `native_priority`, else 0) and ``task`` (a string, at most MAX_TASK_CHARS), and
    ``handoff_ttft`` (seconds, >= 0) where ``slo_handoff_ttft_ms`` is usable. `refused`
    lists (field, value) for each value given but not usable."""
    ea = extra_args if isinstance(extra_args, dict) else {}
    fields: dict = {}
    refused: list[tuple[str, object]] = []
    for key, name in MS_FIELDS:
        if key in ea:
            ms = _positive_ms(ea[key])
            if ms is None:
                refused.append((key, ea[key]))
            else:
                fields[name] = ms / 1e3
    if HANDOFF_TTFT_FIELD in ea:
        ms = _handoff_ms(ea[HANDOFF_TTFT_FIELD])
        if ms is None:
            refused.append((HANDOFF_TTFT_FIELD, ea[HANDOFF_TTFT_FIELD]))
        else:
            fields["handoff_ttft"] = ms / 1e3
    raw = ea.get("priority", native_priority)
    prio = _level(raw)
    if prio is None:
        refused.append(("priority", raw))
        prio = 0
    fields["priority"] = prio
    task = ea.get("task", "")
    fields["task"] = (task if isinstance(task, str) else str(task))[:MAX_TASK_CHARS]
    return fields, refused


def log_refused(logger, warned: set, field: str, value) -> None:
    """Log once per field (per `warned` set) that a client's value was not usable."""
    if field in warned:
        return
    warned.add(field)
    want = {"priority": "an integer", HANDOFF_TTFT_FIELD: f"a number in [0, {MAX_HANDOFF_TTFT_MS:.0f}]"}.get(
        field, "a finite number > 0"
    )
    logger.warning(
        "slocore: %s %s is not usable (expected %s); the default is used instead (logged once per field)",
        field,
        repr(value)[:80],
        want,
    )
