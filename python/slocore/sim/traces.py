"""Trace replay from CSV: a plain format, the Azure LLM inference trace and BurstGPT.

  plain     arrival,prompt_len,output_len[,ttft,tpot,deadline,priority,task]  (seconds)
  azure     TIMESTAMP,ContextTokens,GeneratedTokens   (datetime strings, 7 fractional digits)
  burstgpt  Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
Malformed rows raise ValueError naming the file, the 1-based line and the column, or are
skipped and counted (on_error="skip"). rate_scale=2 doubles the request rate.
"""

from __future__ import annotations

import csv
import math
from datetime import datetime
from pathlib import Path

import numpy as np

from slocore.sim.workloads import Workload

FORMATS = {
    "plain": ("arrival", "prompt_len", "output_len"),
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
}


def _detect(header: list[str]) -> str:
    for name, cols in FORMATS.items():
        if all(c in header for c in cols):
            return name
    raise ValueError(f"cannot detect the trace format from header {header} (formats: {FORMATS})")


def _azure_time(s: str) -> float:
    s = s.strip()
    if "." in s:  # Python's %f takes at most 6 digits; the trace has 7
        head, frac = s.split(".", 1)
        s = f"{head}.{frac[:6]}"
        return datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").timestamp()
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S").timestamp()


def load_trace(
    path,
    format: str = "auto",
    rate_scale: float = 1.0,
    limit: int | None = None,
    default_ttft: float = 1.0,
    default_tpot: float = 0.1,
    on_error: str = "raise",
) -> Workload:
    path = Path(path)
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error: must be 'raise' or 'skip', got {on_error!r}")
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        fmt = _detect(header) if format == "auto" else format
        if fmt not in FORMATS:
            raise ValueError(f"format: unknown {format!r} (known: auto, {', '.join(FORMATS)})")
        missing = [c for c in FORMATS[fmt] if c not in header]
        if missing:
            raise ValueError(f"{path}: {fmt} trace lacks column(s) {missing}")
        col = {h: i for i, h in enumerate(header)}
        t_col, p_col, o_col = FORMATS[fmt]
        rows, skipped, tasks = [], 0, {"default": 0}
        for lineno, row in enumerate(reader, start=2):
            if limit is not None and len(rows) >= limit:
                break
            if not row or all(not x.strip() for x in row):
                continue
            field = t_col
            try:
                if len(row) < len(header):
                    field = header[len(row)]
                    raise ValueError("missing field")
                raw_t = row[col[t_col]]
                t = _azure_time(raw_t) if fmt == "azure" else float(raw_t)
                if not math.isfinite(t):
                    raise ValueError("not finite")
                field = p_col
                p = int(float(row[col[p_col]]))
                field = o_col
                o = int(float(row[col[o_col]]))
                if p < 1:
                    field = p_col
                    raise ValueError("must be >= 1")
                if o < 1:
                    raise ValueError("must be >= 1")
                extra = {}
                for name in ("ttft", "tpot", "deadline", "priority") if fmt == "plain" else ():
                    field = name
                    if name in col and row[col[name]].strip():
                        extra[name] = float(row[col[name]])
                task = (
                    row[col["task"]].strip()
                    if fmt == "plain" and "task" in col
                    else (row[col["Model"]].strip() if fmt == "burstgpt" and "Model" in col else "default")
                )
            except (ValueError, IndexError) as e:
                if on_error == "skip":
                    skipped += 1
                    continue
                raise ValueError(f"{path}: line {lineno}: column {field!r}: {e}") from None
            tasks.setdefault(task, len(tasks))
            rows.append(
                (
                    t,
                    p,
                    o,
                    extra.get("ttft", default_ttft),
                    extra.get("tpot", default_tpot),
                    extra.get("deadline", math.nan),
                    int(extra.get("priority", 0)),
                    tasks[task],
                )
            )
    if not rows:
        raise ValueError(f"{path}: no requests")
    if not (rate_scale > 0 and math.isfinite(rate_scale)):
        raise ValueError(f"rate_scale: must be finite and > 0, got {rate_scale}")
    rows.sort(key=lambda r: r[0])
    a = np.array(rows, dtype=float)
    n = len(rows)
    return Workload(
        arrival=(a[:, 0] - a[0, 0]) / rate_scale,
        prompt_len=a[:, 1],
        output_len=a[:, 2],
        ttft=a[:, 3],
        tpot=a[:, 4],
        deadline=a[:, 5],
        priority=a[:, 6],
        priority_weight=np.ones(n),
        utility=np.ones(n),
        task=a[:, 7],
        task_names=tuple(tasks),
        name=f"trace:{path.name}",
        params=dict(path=str(path), format=fmt, rate_scale=rate_scale, skipped=skipped),
    )
