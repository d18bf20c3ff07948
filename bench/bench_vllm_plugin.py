"""What the scheduler plugin adds to each vLLM step, side by side in one run: vLLM's own V1
``Scheduler.schedule()`` against ``SlocoreScheduler.schedule()`` (the view built from vLLM's
queues, the batch scheduler's plan, the queues put in its order, vLLM's own schedule), on the
same requests, in the real scheduler built in-process (no model runs: fake outputs, as
``slocore.integrations.vllm.testing`` does).

    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python python -m pytest bench/bench_vllm_plugin.py -s
    /tmp/slocore-vllm-venv/bin/python bench/bench_vllm_plugin.py   # the same, as a script

Per case (running batch x waiting queue) and scheduler, rounds alternate over the
schedulers; each round drives a fresh scheduler for WARM + STEPS steps and keeps the median
of the last STEPS ``schedule()`` calls. The report gives the median over rounds and the
plugin's extra time per step over vLLM's in the same run (a plan that schedules fewer
tokens also leaves vLLM's own schedule less to do: the tokens per step say so). On a CPU-bound engine the extra
is lost throughput: the tiny model's step costs ~3.3 ms (docs/fidelity.md).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM, STEPS = 20, 150
ROUNDS = int(os.environ.get("SLOCORE_BENCH_ROUNDS", "3"))
CASES = [(16, 16), (32, 64), (64, 256), (256, 2048)]  # (max_num_seqs: the running batch, waiting)
SCHEDULERS = ["vllm", "slo_triage", "slide_batching", "sarathi_fcfs"]


def step_times(model_dir: str, scheduler: str, running: int, waiting: int) -> tuple[float, int]:
    """Median schedule() seconds over STEPS steps, and the tokens those steps scheduled."""
    from slocore.integrations.vllm.scheduler import SlocoreScheduler
    from slocore.integrations.vllm.testing import make_request, make_scheduler, step

    cfg = None if scheduler == "vllm" else {"slocore": {"batch_scheduler": scheduler, "params": {}}}
    s = make_scheduler(
        model_dir,
        None if scheduler == "vllm" else SlocoreScheduler,
        num_blocks=8192,
        max_num_seqs=running,
        max_num_batched_tokens=2048,
        max_model_len=2048,
        additional_config=cfg,
    )
    t0 = time.time()
    for i in range(running + waiting):  # long enough that none finishes while measured
        slo = {"slo_ttft_ms": 1000 + 500 * (i % 4), "slo_tpot_ms": 100, "priority": i % 3}
        s.add_request(make_request(200 + 7 * (i % 50), 1000, slo, arrival=t0 + i * 1e-3))
    times, tokens, planned = [], 0, []
    for k in range(WARM + STEPS):
        a = time.perf_counter()
        so, _ = step(s, on_scheduled=lambda _: planned.append(time.perf_counter()))  # schedule(), fake outputs
        if k >= WARM:
            times.append(planned[-1] - a)
            tokens += so.total_num_scheduled_tokens
    return statistics.median(times), tokens


def measure(model_dir: str) -> list[dict]:
    import slocore

    names = [n for n in SCHEDULERS if n == "vllm" or n in slocore.batch_scheduler_names()]
    rows = []
    for running, waiting in CASES:
        per: dict[str, list[float]] = {n: [] for n in names}
        tokens: dict[str, int] = {}
        for _ in range(ROUNDS):
            for n in names:
                t, tok = step_times(model_dir, n, running, waiting)
                per[n].append(t)
                tokens[n] = tok
        base = statistics.median(per["vllm"])
        for n in names:
            med = statistics.median(per[n])
            rows.append(
                dict(
                    running=running,
                    waiting=waiting,
                    scheduler=n,
                    median_us=med * 1e6,
                    extra_us=(med - base) * 1e6,
                    ratio=med / base,
                    tokens=tokens[n],
                )
            )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| running x waiting | scheduler | tokens per step | schedule() us | extra over vLLM's us | x vLLM's |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['running']} x {r['waiting']} | {r['scheduler']} | {r['tokens'] / STEPS:.0f} | "
            f"{r['median_us']:.0f} | {r['extra_us']:+.0f} | {r['ratio']:.2f} |"
        )
    return "\n".join(out)


def test_plugin_step_cost_beside_vllm():
    import pytest

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from slocore.childenv import child_env
    from vllmkit import vllm_python

    py, why = vllm_python("docs/serving.md")
    if py is None:
        pytest.skip(why)
    env = child_env(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", SLOCORE_ONLINE_FIT="1")
    r = subprocess.run([py, __file__, "--json"], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    print("\n" + table(rows))
    for row in rows:  # every scheduler ran the same steps and scheduled work in them
        assert row["tokens"] > 0, row
        assert row["median_us"] > 0, row
    assert {row["scheduler"] for row in rows} >= {"vllm", "slo_triage", "sarathi_fcfs"}


if __name__ == "__main__":
    from slocore.integrations.vllm.tiny_model import write

    with tempfile.TemporaryDirectory() as d:
        rows = measure(str(write(d)))
    print(json.dumps(rows) if "--json" in sys.argv else table(rows))
