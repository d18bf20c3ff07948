"""`slocore fit`: latency-model coefficients from a user's own measurements, by least
squares on relative error (HFX appendix A; C++ core/fit.h).

CSV formats (header row required; lines starting with '#' are comments):
  stage        batch_size,input_len,prefill_s[,decode_s]   HFX Eq. 1-2 profiling tuples
               (beta, l_i, t_p, t_d): prefill ~ a + b*beta*l + c*beta*l^2,
               decode ~ a' + b'*beta*l + c'*beta
  per_request  time_s,sum_lq_sq,sum_lq_lkv,sum_lq,sum_lkv_decode,num_decode
               ProServe Eq. 7 per measured batch
  tps          batch_size,tokens_per_s                     SIBYL TPS(N) = aN^2 + bN + c
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from slocore import _core

MODELS = {
    "stage": ["batch_size", "input_len", "prefill_s"],
    "per_request": ["time_s", "sum_lq_sq", "sum_lq_lkv", "sum_lq", "sum_lkv_decode", "num_decode"],
    "tps": ["batch_size", "tokens_per_s"],
}


def read_rows(path: str | Path, required: list[str]) -> list[dict[str, float]]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text (CSV) file") from None
    lines = [l for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    reader = csv.DictReader(lines)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)} (have: {reader.fieldnames})")
    rows = []
    for lineno, row in enumerate(reader, start=2):
        out = {}
        for k, v in row.items():
            if v is None or v == "":
                if k in required:
                    raise ValueError(f"{path}: row {lineno}: column {k!r} is empty")
                continue
            try:
                out[k] = float(v)
            except ValueError:
                raise ValueError(f"{path}: row {lineno}: column {k!r} is not a number: {v!r}") from None
            if not math.isfinite(out[k]) or out[k] < 0:
                raise ValueError(f"{path}: row {lineno}: column {k!r} must be finite and >= 0, got {v!r}")
        rows.append(out)
    if not rows:
        raise ValueError(f"{path}: no data rows")
    return rows


def _fit(X, y, names):
    try:
        res = _core.fit_relative_least_squares(X, y)
    except ValueError as e:  # the binding's message names its own arguments, not the user's rows
        raise ValueError(
            f"cannot fit {', '.join(names)} to {len(y)} row(s) ({e.args[0] if e.args else e}): the rows must "
            "vary enough (several batch sizes and lengths, at least as many rows as coefficients)"
        ) from None
    return {
        "coeffs": dict(zip(names, res.coeffs)),
        "rms_rel_error": res.rms_rel_error,
        "max_rel_error": res.max_rel_error,
        "samples": len(y),
    }


def fit(model: str, path: str | Path) -> dict:
    if model not in MODELS:
        raise ValueError(f"model: unknown {model!r} (known: {', '.join(MODELS)})")
    rows = read_rows(path, MODELS[model])
    if model == "stage":
        pre = _fit(
            [[1.0, r["batch_size"] * r["input_len"], r["batch_size"] * r["input_len"] ** 2] for r in rows],
            [r["prefill_s"] for r in rows],
            ["a", "b", "c"],
        )
        out = {"model": "stage", "prefill": pre}
        dec_rows = [r for r in rows if "decode_s" in r]
        if dec_rows:
            dec = _fit(
                [[1.0, r["batch_size"] * r["input_len"], r["batch_size"]] for r in dec_rows],
                [r["decode_s"] for r in dec_rows],
                ["a'", "b'", "c'"],
            )
            out["decode"] = dec
            # The same model as ProServe's per-request coefficients (latency_model.h).
            out["per_request"] = {
                "t_c": dec["coeffs"]["a'"],
                "a_p": pre["coeffs"]["c"],
                "b_p": 0.0,
                "c_p": pre["coeffs"]["b"],
                "a_d": dec["coeffs"]["b'"],
                "b_d": dec["coeffs"]["c'"],
            }
        return out
    if model == "per_request":
        names = ["t_c", "a_p", "b_p", "c_p", "a_d", "b_d"]
        X = [[1.0, r["sum_lq_sq"], r["sum_lq_lkv"], r["sum_lq"], r["sum_lkv_decode"], r["num_decode"]] for r in rows]
        return {"model": "per_request", **_fit(X, [r["time_s"] for r in rows], names)}
    X = [[r["batch_size"] ** 2, r["batch_size"], 1.0] for r in rows]
    return {"model": "tps", **_fit(X, [r["tokens_per_s"] for r in rows], ["a", "b", "c"])}


def sample_path(model: str) -> Path:
    return Path(__file__).parent / "data" / "fit" / f"sample_{model}.csv"
