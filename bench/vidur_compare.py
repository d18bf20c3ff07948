"""Simulated requests per wall second: Vidur vs slocore on one shared trace.

Standalone script (not a pytest test). It writes one trace CSV, replays it in Vidur (in
its own virtual environment, as a subprocess) and in slocore, and prints simulated
requests/s for each and their ratio.

    PYTHONPATH=python nice -n 10 python3 bench/vidur_compare.py \\
        --vidur-python /tmp/vidur-venv/bin/python --vidur-dir /tmp/vidur_run

Setting Vidur up (nothing of Vidur, code or data, lives in this repository):

1. Vidur itself, from PyPI, in its own venv (Python 3.11):
       python3 -m venv /tmp/vidur-venv
       /tmp/vidur-venv/bin/pip install vidur==0.0.26
   0.0.26 is the project-vajra line of Vidur: it downloads profiles from Hugging Face
   datasets. This script does not: its driver (below) points the predictor at local CSVs
   in the microsoft/vidur layout and turns the Hugging Face prediction download off.
2. Profiling data, from https://github.com/microsoft/vidur (MIT), copied OUTSIDE this
   repository, e.g. with `git clone https://github.com/microsoft/vidur /tmp/vidur-src`:
       <vidur-dir>/data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv
       <vidur-dir>/data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/attention.csv
       <vidur-dir>/data/profiling/network/h100_dgx/all_reduce.csv
       <vidur-dir>/data/profiling/network/h100_dgx/send_recv.csv
   (mkdir -p /tmp/vidur_run && cp -r /tmp/vidur-src/data /tmp/vidur_run/). With --device
   a100 the a100 / a100_dgx folders are used instead. attention.csv is ~10 MB; some
   mirrors and forks hold it only as a Git LFS pointer. This script refuses a pointer. If
   you cannot get the real file, --synthesize-attention writes a stand-in with the same
   columns and a simple cost formula (see synth_attention). Simulator speed depends
   little on the exact kernel times, but the batch dynamics will differ a little, so the
   output then says the attention times are synthetic.
3. Vidur caches its trained predictor under <vidur-dir>/.vidur_cache (.vidur_cache_synthetic
   with the stand-in attention). The first run trains it; that time is reported apart from
   the simulation ("setup"). Its cache key covers the configuration, not the CSV contents:
   delete the folder after replacing a CSV.

What is timed:
  Vidur   the simulator's event loop (Simulator.run without writing its output), after
          Simulator() is built (trace loading, predictor training or cache load). Setup
          and output writing are reported separately.
  slocore the whole slocore.sim.simulate() call (building requests, the C++ run,
          summarising the metrics), median of --repeats.

Configuration on both sides: Llama-2-7B, TP1, --instances replicas, round robin
routing, Sarathi-style chunked prefill with a 512-token budget, at most 128 sequences
per batch. The trace is ShareGPT-like (log-normal prompt/output lengths, mean about 258
and 208 tokens, prompt + output <= 4096) with Poisson arrivals. Vidur's execution
times come from its random-forest predictor trained on the profiling CSVs (the
linear-regression predictor of 0.0.26 cannot be instantiated: an abstract method is
missing), with a reduced grid search (50 trees, depth 16, 2-fold CV; --full-rf-grid for
Vidur's default 27-point, 10-fold grid, which takes far longer to train but does not change
the loop's cost much, since predictions are looked up in precomputed tables). slocore's come
from the roofline profile "h100-llama2-7b". So the two
simulate the same trace and policies, but with different latency models: compare the
batch counts that are printed alongside.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "meta-llama/Llama-2-7b-hf"

# Runs inside Vidur's venv: argv = data_dir trace out_json vidur-cli-args...
DRIVER = r"""
import json, os, sys, time
from collections import Counter
data_dir, trace, out_json = sys.argv[1], sys.argv[2], sys.argv[3]
from vidur.execution_time_predictor import sklearn_execution_time_predictor as skl

def _local_inputs(self):
    rc = self._replica_config
    comp = os.path.join(data_dir, "profiling", "compute", rc.device, rc.model_name)
    net = os.path.join(data_dir, "profiling", "network", rc.network_device)
    return (f"{comp}/mlp.csv", f"{comp}/attention.csv", f"{net}/all_reduce.csv", f"{net}/send_recv.csv")

def _no_hf(self):
    raise RuntimeError("Hugging Face predictions disabled by vidur_compare")

skl.SklearnExecutionTimePredictor._get_input_files = _local_inputs
skl.SklearnExecutionTimePredictor._load_predictions_from_hf = _no_hf
from vidur.config import SimulationConfig
from vidur.simulator import Simulator
from vidur.utils.random import set_seeds

sys.argv = ["vidur"] + sys.argv[4:]
config = SimulationConfig.create_from_cli_args()
set_seeds(config.seed)
t0 = time.perf_counter()
sim = Simulator(config)
t1 = time.perf_counter()
from vidur.events.batch_end_event import BatchEndEvent
counts = Counter()
_handle = BatchEndEvent.handle_event
def _counted(self, *a, **k):
    counts["batches"] += 1
    return _handle(self, *a, **k)
BatchEndEvent.handle_event = _counted
w = {}
_write = sim._write_output
def _timed_write():
    w["start"] = time.perf_counter()
    _write()
    w["end"] = time.perf_counter()
sim._write_output = _timed_write
sim.run()
json.dump(dict(setup_s=t1 - t0, loop_s=w["start"] - t1, output_s=w["end"] - w["start"],
               sim_end_time=float(sim._time), batches=counts["batches"]), open(out_json, "w"))
"""


def die(msg: str) -> None:
    print(f"vidur_compare: {msg}", file=sys.stderr)
    sys.exit(2)


def data_paths(vidur_dir: Path, device: str) -> dict:
    comp = vidur_dir / "data" / "profiling" / "compute" / device / MODEL
    net = vidur_dir / "data" / "profiling" / "network" / f"{device}_dgx"
    return {
        "mlp": comp / "mlp.csv",
        "attention": comp / "attention.csv",
        "all_reduce": net / "all_reduce.csv",
        "send_recv": net / "send_recv.csv",
    }


def is_lfs_pointer(p: Path) -> bool:
    with p.open("rb") as f:
        return f.read(40).startswith(b"version https://git-lfs")


def synth_attention(path: Path, device: str) -> None:
    """Stand-in attention.csv (columns of Vidur's profiler; per-layer ms). Decode:
    0.008 + (0.0013 b + 8.2e-6 b kv) / tp; prefill chunk c after kv cached tokens:
    0.01 + (0.11 + 1e-4 c + 1.28e-7 c (kv + c/2)) / tp. Fitted by eye to a few rows of
    Vidur's A100 Llama-2-7B profile; x0.6 for H100."""
    s = 0.6 if device == "h100" else 1.0
    head = (
        "time_stats.attn_decode.median,time_stats.attn_prefill.median,n_embd,n_q_head,n_kv_head,block_size,"
        "num_tensor_parallel_workers,max_model_len,batch_size,prefill_chunk_size,kv_cache_size,is_prefill,"
        "attention_backend\n"
    )
    tail = "AttentionBackend.FLASH_ATTENTION"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(head)
        for tp in (1, 2, 4, 8):
            for kv in list(range(32, 4097, 128)) + [4096]:
                for b in range(1, 129):
                    t = s * (0.008 + (0.0013 * b + 8.2e-6 * b * kv) / tp)
                    f.write(f"{t:.6g},,4096,32,32,16,{tp},4096,{b},0,{kv},False,{tail}\n")
            for c in range(32, 4097, 64):
                for kv in range(0, 4097 - c, 256):
                    t = s * (0.01 + (0.11 + 1e-4 * c + 1.28e-7 * c * (kv + c / 2)) / tp)
                    f.write(f",{t:.6g},4096,32,32,16,{tp},4096,1,{c},{kv},True,{tail}\n")


def check_vidur(args) -> tuple[Path, bool]:
    py = Path(args.vidur_python)
    if not py.is_file():
        die(f"--vidur-python {py}: no such file. Set Vidur up as described in this script's docstring.")
    r = subprocess.run(
        [str(py), "-c", "import vidur, sklearn, pandas; print(vidur.__file__)"], capture_output=True, text=True
    )
    if r.returncode != 0:
        die(
            f"{py} cannot import vidur ({r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'no output'}). "
            "Install it in that venv: pip install vidur==0.0.26"
        )
    vdir = Path(args.vidur_dir)
    paths = data_paths(vdir, args.device)
    synthetic = False
    att = paths["attention"]
    if (not att.is_file() or is_lfs_pointer(att)) and args.synthesize_attention:
        synth = att.with_name("attention.synthetic.csv")
        if not synth.is_file():
            synth_attention(synth, args.device)
        if att.is_file() or att.is_symlink():
            att.unlink()
        att.symlink_to(synth.name)
        synthetic = True
    elif att.is_symlink() and os.readlink(att) == "attention.synthetic.csv":
        synthetic = True
    for name, p in paths.items():
        if not p.is_file():
            die(
                f"Vidur profiling data missing: {p}\n  copy data/profiling from microsoft/vidur into {vdir}/data "
                "(see this script's docstring)" + (" or pass --synthesize-attention" if name == "attention" else "")
            )
        if is_lfs_pointer(p):
            die(f"{p} is a Git LFS pointer, not data: fetch it with git lfs, or pass --synthesize-attention")
    return vdir, synthetic


def write_trace(path: Path, n: int, rate: float, seed: int) -> tuple:
    import numpy as np

    from slocore.sim import workloads

    w = workloads.sharegpt_like(rate=rate, n=n, seed=seed)
    out = w.output_len
    prompt = np.maximum(1, np.minimum(w.prompt_len, 4096 - out))  # Vidur's Llama-2 limit: prompt + output <= 4096
    with path.open("w") as f:  # slocore reads arrival/prompt_len/output_len, Vidur Date/Time/...TokenCount
        f.write("arrival,prompt_len,output_len,Date,Time,PromptTokenCount,CompletionTokenCount\n")
        for a, p, o in zip(w.arrival, prompt, out):
            f.write(f"{a:.6f},{p},{o},2023-08-21,{a:.6f},{p},{o}\n")
    return float(prompt.mean()), float(out.mean()), float(w.arrival[-1])


def vidur_args(args, trace: Path, out_dir: Path) -> list[str]:
    rf = "--random_forrest_execution_time_predictor_config_"
    a = [
        "--seed",
        str(args.seed),
        "--log_level",
        "warning",
        "--cluster_config_num_replicas",
        str(args.instances),
        "--replica_config_model_name",
        MODEL,
        "--replica_config_device",
        args.device,
        "--replica_config_network_device",
        f"{args.device}_dgx",
        "--replica_config_tensor_parallel_size",
        "1",
        "--replica_config_num_pipeline_stages",
        "1",
        "--global_scheduler_config_type",
        "round_robin",
        "--replica_scheduler_config_type",
        "sarathi",
        "--sarathi_scheduler_config_chunk_size",
        str(args.token_budget),
        "--sarathi_scheduler_config_batch_size_cap",
        str(args.max_seqs),
        "--request_generator_config_type",
        "trace_replay",
        "--trace_request_generator_config_trace_file",
        str(trace),
        "--trace_request_generator_config_date",
        "2023-08-21",
        "--trace_request_generator_config_prefill_scale_factor",
        "1",
        "--trace_request_generator_config_decode_scale_factor",
        "1",
        "--trace_request_generator_config_time_scale_factor",
        "1",
        "--trace_request_generator_config_max_tokens",
        "4096",
        "--execution_time_predictor_config_type",
        "random_forrest",
        rf + "prediction_max_tokens_per_request",
        "4096",
        rf + "prediction_max_batch_size",
        str(args.max_seqs),
        rf + "num_training_job_threads",
        "1",
        rf + "cache_dir",
        str(cache_dir(args)),
        "--no-metrics_config_enable_chrome_trace",
        "--no-metrics_config_store_plots",
        "--metrics_config_output_dir",
        str(out_dir),
    ]
    if not args.full_rf_grid:  # Vidur's default grid search (27 fits x 10 folds x 12 models) takes very long
        a += [
            rf + "k_fold_cv_splits",
            "2",
            rf + "num_estimators",
            "50",
            rf + "max_depth",
            "16",
            rf + "min_samples_split",
            "2",
        ]
    return a


def cache_dir(args) -> Path:
    # Vidur's cache key covers the configuration, not the CSV contents: keep synthetic apart
    return Path(args.vidur_dir) / (".vidur_cache_synthetic" if args.synthetic else ".vidur_cache")


def run_vidur(args, trace: Path, work: Path, tag: str) -> dict:
    driver = work / "vidur_driver.py"
    driver.write_text(DRIVER)
    out_json = work / f"vidur_{tag}.json"
    cmd = [
        args.vidur_python,
        str(driver),
        str(Path(args.vidur_dir) / "data"),
        str(trace),
        str(out_json),
        *vidur_args(args, trace, work / "vidur_out"),
    ]
    env = dict(os.environ, WANDB_MODE="disabled", HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run(cmd, cwd=args.vidur_dir, env=env, capture_output=True, text=True, timeout=args.vidur_timeout)
    if r.returncode != 0:
        die(f"Vidur failed (exit {r.returncode}):\n" + "\n".join((r.stdout + r.stderr).strip().splitlines()[-25:]))
    return json.loads(out_json.read_text())


def run_slocore(args, trace: Path) -> tuple[float, list, dict]:
    from slocore.sim import simulate
    from slocore.sim.traces import load_trace

    w = load_trace(trace)
    times, res = [], None
    for _ in range(args.repeats):
        t = time.perf_counter()
        res = simulate(
            w,
            profile=args.profile,
            instances=args.instances,
            global_policy="round_robin",
            batch_scheduler=("sarathi_fcfs", {"token_budget": args.token_budget}),
            max_batch_tokens=args.token_budget,
            max_num_seqs=args.max_seqs,
            seed=args.seed,
        )
        times.append(time.perf_counter() - t)
    assert res.summary["finished"] == len(w), res.summary
    return statistics.median(times), times, dict(res.stats, mean_tpot=res.summary["tpot"]["mean"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vidur-python", required=True, help="python of the venv with vidur==0.0.26")
    ap.add_argument("--vidur-dir", required=True, help="folder holding data/profiling/... (see docstring)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--rate", type=float, default=10.0, help="Poisson arrival rate, requests/s (whole cluster)")
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--token-budget", type=int, default=512)
    ap.add_argument("--max-seqs", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=("h100", "a100"), default="h100")
    ap.add_argument("--profile", default=None, help="slocore profile (default <device>-llama2-7b)")
    ap.add_argument("--repeats", type=int, default=3, help="slocore runs (median)")
    ap.add_argument("--vidur-repeats", type=int, default=1, help="Vidur runs (median)")
    ap.add_argument("--vidur-timeout", type=float, default=1800)
    ap.add_argument(
        "--synthesize-attention",
        action="store_true",
        help="write a stand-in attention.csv when the real one is absent or an LFS pointer",
    )
    ap.add_argument("--full-rf-grid", action="store_true", help="Vidur's default random-forest grid search")
    ap.add_argument("--keep", help="folder to keep the trace and Vidur outputs in")
    args = ap.parse_args(argv)
    args.profile = args.profile or f"{args.device}-llama2-7b"
    if args.requests < 1 or not (args.rate > 0 and math.isfinite(args.rate)):
        die("--requests must be >= 1 and --rate finite and > 0")
    try:
        from slocore.profiles import load_profile

        load_profile(args.profile)
    except Exception as e:  # noqa: BLE001 - report and stop
        die(f"slocore profile {args.profile!r}: {e} (run with PYTHONPATH=python from the repository root)")
    _, synthetic = check_vidur(args)
    args.synthetic = synthetic

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vidur_compare_"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / "trace.csv"
    pm, om, last = write_trace(trace, args.requests, args.rate, args.seed)
    print(
        f"trace: {args.requests} requests, Poisson {args.rate:g} req/s (last arrival {last:.1f} s), "
        f"ShareGPT-like lengths: prompt mean {pm:.1f}, output mean {om:.1f} tokens -> {trace}"
    )
    print(
        f"cluster: {args.instances} x Llama-2-7B TP1 on {args.device}, round robin, Sarathi chunked prefill "
        f"budget {args.token_budget}, <= {args.max_seqs} seqs/batch"
    )

    warm = work / "trace_warmup.csv"
    warm.write_text("".join(trace.read_text().splitlines(keepends=True)[:51]))
    t = time.perf_counter()
    w = run_vidur(args, warm, work, "warmup")
    print(
        f"Vidur setup on a 50-request warm-up run: {w['setup_s']:.1f} s in Simulator() "
        f"({time.perf_counter() - t:.1f} s process); includes predictor training when "
        f"{cache_dir(args)} was cold"
    )
    vruns = [run_vidur(args, trace, work, f"run{i}") for i in range(args.vidur_repeats)]
    v_loop = statistics.median(r["loop_s"] for r in vruns)
    v = vruns[0]
    s_med, s_times, s_stats = run_slocore(args, trace)

    n = args.requests
    v_rps, s_rps = n / v_loop, n / s_med
    print(
        f"\nVidur 0.0.26 (random forest{', synthetic attention' if synthetic else ''}): "
        f"loop {v_loop:.2f} s (runs {[round(r['loop_s'], 2) for r in vruns]}), setup {v['setup_s']:.2f} s, "
        f"output {v['output_s']:.2f} s; {v['batches']:,} batches, simulated end {v['sim_end_time']:.1f} s"
    )
    print(
        f"slocore ({args.profile}): {s_med:.3f} s median of {[round(x, 3) for x in s_times]}; "
        f"{s_stats['iterations']:,} iterations, {s_stats['events']:,} events, simulated end "
        f"{s_stats['end_time']:.1f} s, mean TPOT {s_stats['mean_tpot'] * 1e3:.2f} ms"
    )
    print(f"\n{'':10s}{'requests/s':>14s}")
    print(f"{'Vidur':10s}{v_rps:14,.0f}")
    print(f"{'slocore':10s}{s_rps:14,.0f}")
    print(
        f"ratio slocore/Vidur: {s_rps / v_rps:,.0f}x  (per batch/iteration: "
        f"{(v_loop / max(v['batches'], 1)) / (s_med / max(s_stats['iterations'], 1)):,.0f}x)"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
