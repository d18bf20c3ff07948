"""Named hardware profiles: the simulator's truth per (accelerator, model), as versioned
JSON data derived by roofline.py from public specs and checked against the papers' quoted
numbers (DESIGN.md "Simulator truth vs. policy belief")."""
from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

REQUIRED = {
    "per_request": ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d"),
    "kv": ("block_size", "num_blocks", "bytes_per_token"),
    "kv_transfer": ("bandwidth_bytes_per_s", "fixed_s"),
}


def list_profiles() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files(__package__).joinpath("data").iterdir() if p.name.endswith(".json"))


def validate(data: dict, where: str = "profile") -> dict:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ValueError(f"{where}: name: missing")
    for section, keys in REQUIRED.items():
        if not isinstance(data.get(section), dict):
            raise ValueError(f"{where}: {section}: missing")
        for k in keys:
            v = data[section].get(k)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{where}: {section}.{k}: must be a finite number >= 0, got {v!r}")
    if data["kv"]["num_blocks"] < 1 or data["kv"]["block_size"] < 1:
        raise ValueError(f"{where}: kv.num_blocks/block_size: must be >= 1")
    tps = data.get("tps_quadratic")
    if tps is not None and not all(isinstance(tps.get(k), (int, float)) and math.isfinite(tps[k]) for k in "abc"):
        raise ValueError(f"{where}: tps_quadratic: needs finite a, b, c")
    return data


def load_profile_file(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: {e}") from None
    return validate(data, str(path))


def load_profile(name: str) -> dict:
    if name not in list_profiles():
        p = Path(name)
        if p.suffix == ".json" and p.is_file():
            return load_profile_file(p)
        raise KeyError(f"unknown profile {name!r} (known: {', '.join(list_profiles())})")
    ref = resources.files(__package__).joinpath("data", f"{name}.json")
    return validate(json.loads(ref.read_text()), f"profiles/data/{name}.json")
