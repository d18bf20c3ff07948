"""The `slocore` stack with its engine scheduler (the plugin setting) against every baseline
router over vLLM's own scheduler (the default setting), from one `slocore bench live` output:
per trace and class, the difference paired by repetition index with its 95% CI (Student t).
For a run with `--blocks` (the two settings as two blocks, the engines restarted in between):
this pairing is by repetition, not interleaved. Without `--blocks` the runs of both settings
are interleaved and `live.md` has this comparison already ("across engine schedulers").

    python bench/live_vs_default.py OUT/live.json
"""

import json
import math
import statistics
import sys

T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)


def attainment_by_rep(d: dict, setting: str, trace: str, stack: str) -> dict:
    runs = d["settings"][setting]["traces"][trace]["runs"]
    return {r["rep"]: r["attainment"] for r in runs if r["stack"] == stack}


def main(path: str) -> None:
    d = json.load(open(path))
    if not {"default", "plugin"} <= set(d["settings"]):
        raise SystemExit("needs both settings: bench live --settings default,plugin")
    for trace in d["settings"]["plugin"]["traces"]:
        ours = attainment_by_rep(d, "plugin", trace, "slocore")
        stacks = dict.fromkeys(r["stack"] for r in d["settings"]["default"]["traces"][trace]["runs"])
        print(f"\n{trace}: slocore (plugin) minus each router over vLLM's scheduler, points [95% CI]")
        for base in stacks:
            if base == "slocore":
                continue
            theirs = attainment_by_rep(d, "default", trace, base)
            reps = sorted(set(ours) & set(theirs))
            cells = []
            for cls in ours[reps[0]]:
                ds = [100 * (ours[k][cls] - theirs[k][cls]) for k in reps]
                m = statistics.fmean(ds)
                h = T975[len(ds) - 2] * statistics.stdev(ds) / math.sqrt(len(ds)) if len(ds) > 1 else math.inf
                cells.append(f"{cls} {m:+.1f} [{m - h:+.1f}, {m + h:+.1f}]")
            print(f"  vs {base:26s} " + "; ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1])
