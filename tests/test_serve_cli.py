"""`slocore engine` and `slocore bench serve` as a user runs them (subprocesses)."""

import json
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from slocore.childenv import child_env  # noqa: E402
from slocore.ports import free_port

ENV = child_env()


def test_engine_and_bench_serve_cli():
    port = free_port()
    eng = subprocess.Popen(
        [sys.executable, "-m", "slocore.cli", "engine", "--port", str(port), "--time-scale", "0.2"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "slocore.cli",
                "bench",
                "serve",
                "--url",
                url,
                "--param",
                "rate=50",
                "--param",
                "n=20",
                "--max-output",
                "16",
                "--json",
                "--quiet",
            ],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["summary"]["finished"] == 20 and out["summary"]["output_tokens"] > 0
        assert "sharegpt_like" in out["title"]
        bad = subprocess.run(
            [sys.executable, "-m", "slocore.cli", "bench", "serve", "--url", url, "--workload", "nope"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert bad.returncode == 2 and "workload: unknown 'nope'" in bad.stderr
    finally:
        eng.terminate()
        eng.wait(10)
        eng.stdout.close()


def test_serve_rejects_bad_config(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("backends:\n  - {name: a, url: 'http://x', role: boss}\n")
    r = subprocess.run(
        [sys.executable, "-m", "slocore.cli", "serve", "--config", str(p)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "backends[0].role" in r.stderr


def test_bench_serve_replays_a_trace(tmp_path):
    import argparse

    from slocore.serve.loadgen import add_arguments, build_workload
    from slocore.sim.workloads import make_workload

    w = make_workload("sharegpt_like", rate=5.0, n=12, seed=2)
    path = tmp_path / "t.csv"
    w.to_csv(path)
    p = argparse.ArgumentParser()
    add_arguments(p)
    a = p.parse_args(["--trace", str(path), "-n", "10", "--rate-scale", "2"])
    t = build_workload(a)
    assert len(t) == 10 and list(t.prompt_len) == list(w.prompt_len[:10])
    assert abs((t.arrival[-1] - t.arrival[0]) - (w.arrival[9] - w.arrival[0]) / 2) < 1e-3  # rate x2
