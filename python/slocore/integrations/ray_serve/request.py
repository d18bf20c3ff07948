"""What the router and the replicas read from a request's body: prompt and output length,
SLO (TTFT/TPOT, seconds) and class. The body is the deployment method's first argument: a
dict (``{"prompt": [ids] | str, "max_tokens": n, "slo": {"ttft_ms": .., "tpot_ms": ..},
"slo_class": name}``) or an object with those attributes (``ray.serve.llm``'s
``CompletionRequest`` / ``ChatCompletionRequest``: ``prompt`` or ``messages``, ``max_tokens``).
A text prompt counts one token per 4 characters (no tokenizer on the router)."""

from __future__ import annotations

import math
from dataclasses import dataclass

KEY_FIELD = "slocore_request_id"  # set by SloHandle: links token events to the routed request
DEFAULT_MAX_TOKENS = 16


@dataclass
class ParsedRequest:
    prompt_len: int
    output_len: int
    ttft: float = math.nan
    tpot: float = math.nan
    task: str = ""
    key: str | None = None


def _get(body, name, default=None):
    if isinstance(body, dict):
        return body.get(name, default)
    return getattr(body, name, default)


def _text_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _positive_int(v, field: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{field}: must be an integer >= 1, got {v!r}")
    return v


def _slo_seconds(v, field: str) -> float:
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ValueError(f"{field}: must be a number > 0 (ms), got {v!r}")
    return float(v) / 1e3


def parse_request(body, classes: dict | None = None, default_slo: dict | None = None) -> ParsedRequest:
    """The request's sizes and SLO; ValueError/TypeError naming the field when malformed.
    `classes`: {name: {"ttft_ms", "tpot_ms"}} for a body naming its ``slo_class``;
    `default_slo` applies when neither the body nor its class gives one."""
    if body is None:
        raise TypeError("request: expected a dict or a request object as the first argument, got None")
    if _get(body, "prompt_len") is not None:
        plen = _positive_int(_get(body, "prompt_len"), "prompt_len")
    else:
        prompt, messages = _get(body, "prompt"), _get(body, "messages")
        if isinstance(prompt, (list, tuple)):
            if prompt and isinstance(prompt[0], (list, tuple)):
                raise ValueError("prompt: one prompt per request (got a batch)")
            plen = max(1, len(prompt))
        elif isinstance(prompt, str):
            plen = _text_tokens(prompt)
        elif messages is not None:
            text = "".join(str(_get(m, "content", "") or "") for m in messages)
            plen = _text_tokens(text)
        else:
            raise ValueError("prompt: missing (give prompt, prompt_len or messages)")
    mt = _get(body, "max_tokens")
    if mt is None:
        mt = _get(body, "max_completion_tokens")
    out = DEFAULT_MAX_TOKENS if mt is None else _positive_int(mt, "max_tokens")
    task = _get(body, "slo_class") or ""
    if not isinstance(task, str):
        raise TypeError(f"slo_class: must be a string, got {type(task).__name__}")
    slo = _get(body, "slo")
    if slo is None and task and classes is not None:
        if task not in classes:
            raise KeyError(f"slo_class: unknown class {task!r} (known: {', '.join(sorted(classes))})")
        slo = classes[task]
    if slo is None:
        slo = default_slo or {}
    if not isinstance(slo, dict):
        raise TypeError(f"slo: must be an object with ttft_ms/tpot_ms, got {type(slo).__name__}")
    key = _get(body, KEY_FIELD)
    if key is not None and not isinstance(key, str):
        raise TypeError(f"{KEY_FIELD}: must be a string")
    return ParsedRequest(
        plen,
        out,
        _slo_seconds(slo.get("ttft_ms"), "slo.ttft_ms"),
        _slo_seconds(slo.get("tpot_ms"), "slo.tpot_ms"),
        task,
        key,
    )
