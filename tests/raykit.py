"""A local Ray for the Ray tests. Ray waits a fixed time for its GCS server to write its port
and for its raylet to register; on a loaded 2-core machine either can run out (both seen in
CI). The first try's processes are then killed (Ray's shutdown does not know them: the node
failed in its constructor), their handles collected with the ResourceWarning they give
(never waited on; pytest reports it in whichever test runs then), and Ray starts once more;
a second failure is the test's."""

import gc
import os
import signal
import time
import warnings

import ray

STARTUP_TIMEOUTS = ("timed out during startup", "Timed out waiting for file")


def init_local_ray(**kwargs) -> None:
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "90")  # Ray's default, 30 s, ran out in CI
    opts = dict(include_dashboard=False, log_to_driver=False, configure_logging=False, **kwargs)
    before = _descendants()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # a failed try's handles: never waited on
        try:
            ray.init(**opts)
            return
        except Exception as e:  # a bare Exception (raylet) or a RuntimeError (GCS port file)
            if not any(m in str(e) for m in STARTUP_TIMEOUTS):
                raise
            _kill(_descendants() - before)
        gc.collect()
    ray.shutdown()
    ray.init(**opts)


def _kill(pids: set[int], timeout_s: float = 10.0) -> None:
    """SIGKILL, then wait until each is dead (a zombie or gone)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if (st := _stat(p)) and st[0] not in ("Z", "X")}
        time.sleep(0.01)


def _stat(pid) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, ...); None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants() -> set[int]:
    """Every process below this one (Linux /proc; empty elsewhere)."""
    parent = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if d.isdigit() and (st := _stat(d)):
            parent[int(d)] = int(st[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found
