"""TDG ratio and SLO attainment vs load from `slocore simulate --json` output (ProServe Fig. 10-12, 15).

PYTHONPATH=python python -m slocore.cli simulate --scenario proserve_single --quiet --json > single.json
python docs/slice_proserve/plot_tdg.py single.json docs/slice_proserve/proserve_single_tdg.png
"""

import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

data = json.load(open(sys.argv[1]))
pts = defaultdict(list)
for r in data["rows"]:
    pts[r["variant"]].append((r["load"], 100 * r["summary"]["tdg_ratio"], 100 * r["summary"]["attainment"]))
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
for v, p in sorted(pts.items()):
    p.sort()
    axes[0].plot([x[0] for x in p], [x[1] for x in p], marker="o", label=v)
    axes[1].plot([x[0] for x in p], [x[2] for x in p], marker="o", label=v)
for ax, lab in zip(axes, ("TDG ratio (%)", "SLO attainment (%)")):
    ax.set_xlabel("request rate (req/s)")
    ax.set_ylabel(lab)
    ax.grid(alpha=0.3)
axes[0].legend(fontsize=7)
fig.suptitle(f"{data['scenario']}: {data['source']}", fontsize=9)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
