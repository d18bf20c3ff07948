"""The slocore issue's targets from one or more `slocore bench matrix` outputs (matrix.json):
cells of several runs with the same configuration are merged, the strongest baseline of each
(workload, error, load) cell is recomputed over every baseline present (highest mean
attainment, ties to the lower cost, as in sim/matrix.py), and the preset is compared with it:

    PYTHONPATH=python python bench/slocore_vs_strongest.py out-a/matrix.json out-b/matrix.json [--preset slocore]

Prints a Markdown table per cell: the preset's attainment, the strongest baseline's, their
difference paired by seed with its 95% CI (Student t), whether the difference is >= -1 point
(mean, and within the CI), whether an overloaded cell (load >= 1) gains >= 10 points; then
goodput (the highest load with mean attainment >= 90%) against the best baseline's.

`--copy-exact-baselines`: baseline cells run with the exact predictor only stand for the
other predictor errors too (a baseline that uses no latency model gives the same result under
every error; docs/benchmark.md "Definitions"), so the baselines need not run three times."""

import argparse
import json
import statistics

from slocore.sim.matrix import GOODPUT_ATTAINMENT, ci95


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--preset", default="slocore")
    ap.add_argument("--copy-exact-baselines", action="store_true")
    a = ap.parse_args()
    cells, caps = {}, {}
    for f in a.files:
        d = json.load(open(f))
        for w, c in d["capacity"].items():
            caps[w] = c["req_s"]
        for c in d["cells"]:
            cells[(c["workload"], c["error"], c["load"], c["preset"])] = c
    if a.copy_exact_baselines:
        errors = {k[1] for k in cells}
        for (w, e, l, p), c in list(cells.items()):
            if e == "exact" and c["kind"] == "baseline":
                for e2 in errors - {"exact"}:
                    cells.setdefault((w, e2, l, p), {**c, "error": e2})
    by_cell = {}
    for (w, e, l, p), c in cells.items():
        by_cell.setdefault((w, e, l), {})[p] = c
    print(
        "| workload | error | load | slocore % | strongest baseline | its % | diff pp (paired, 95% CI) "
        "| mean >= -1 | CI reaches -1 | load >= 1: +10 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    n = below_mean = below_ci = over = over_ok = 0
    for (w, e, l), cs in sorted(by_cell.items()):
        if a.preset not in cs:
            continue
        base = [c for c in cs.values() if c["kind"] == "baseline"]
        b = max(base, key=lambda c: (c["attainment_mean"], -c["cost"]))
        s = cs[a.preset]
        diff = [100 * (x - y) for x, y in zip(s["attainment"], b["attainment"])]
        m, h = statistics.fmean(diff), ci95(diff)
        n += 1
        below_mean += m < -1
        below_ci += m + h < -1
        plus10 = ""
        if l >= 1.0:
            over += 1
            over_ok += m >= 10
            plus10 = "yes" if m >= 10 else "no"
        print(
            f"| {w} | {e} | {l:g} | {100 * s['attainment_mean']:.1f} ± {100 * s['attainment_ci95']:.1f} "
            f"| {b['preset']} "
            f"| {100 * b['attainment_mean']:.1f} ± {100 * b['attainment_ci95']:.1f} | {m:+.1f} ± {h:.1f} "
            f"| {'yes' if m >= -1 else 'NO'} | {'yes' if m + h >= -1 else 'NO'} | {plus10} |"
        )
    print(
        f"\n{n} cells: mean below the strongest baseline - 1 pp in {below_mean}, below it beyond the 95% CI in "
        f"{below_ci}; overloaded cells (load >= 1) with >= +10 pp: {over_ok} of {over}."
    )
    print("\n| workload | error | slocore goodput | best baseline goodput | ratio |\n|---|---|---|---|---|")
    wins = {}
    for w, e in sorted({(k[0], k[1]) for k in by_cell}):
        loads = sorted(l for (ww, ee, l) in by_cell if (ww, ee) == (w, e))

        def goodput(p, w=w, e=e, loads=loads):
            ok = [l for l in loads if by_cell[(w, e, l)].get(p, {}).get("attainment_mean", 0) >= GOODPUT_ATTAINMENT]
            return max(ok) if ok else 0.0

        presets = {p for l in loads for p, c in by_cell[(w, e, l)].items() if c["kind"] == "baseline"}
        if a.preset not in by_cell[(w, e, loads[0])]:
            continue
        bp = max(sorted(presets), key=goodput)
        g, gb = goodput(a.preset), goodput(bp)
        r = g / gb if gb > 0 else (float("inf") if g > 0 else 1.0)  # neither reaches 90%: equal
        wins.setdefault(e, []).append(r >= 1.3)
        print(f"| {w} | {e} | {g:g}x ({g * caps[w]:.1f} req/s) | {gb:g}x ({bp}) | {r:.2f}x |")
    top = max(k[2] for k in by_cell)
    for e, v in wins.items():
        print(f"\ngoodput >= 1.3x the best baseline's on {sum(v)} of {len(v)} workloads ({e}); top load {top:g}x")


if __name__ == "__main__":
    main()
