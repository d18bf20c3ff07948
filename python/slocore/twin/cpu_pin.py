"""Give a vLLM server's engine a core of its own (Linux only).

vLLM-CPU's step is Python-bound: the engine core's scheduler loop and its worker take turns
with whatever else is runnable on their core. With the API server, the profiler or the load
generator on the same cores, a step measures the machine, and the replay meets a different
machine than the profile did (docs/fidelity.md, "An engine with a core of its own"). This
puts every thread of the engine's processes (vLLM names them ``VLLM::EngineCore`` and
``VLLM::Worker``) on `engine_cpus` and the rest of the server's process tree (its API
server) on `other_cpus`; the caller moves itself, the client, with ``pin_self``.

    python -m slocore.twin.cpu_pin SERVER_PID [ENGINE_CPUS [OTHER_CPUS]]   # default: the first CPU, the rest
"""

from __future__ import annotations

import os
import sys

from slocore.twin.cpu_wait import PROC, process_tree

ENGINE_NAMES = ("VLLM::EngineCor", "VLLM::Worker")  # /proc/<pid>/comm: 15 characters at most


def _comm(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def _pin_threads(pid: int, cpus: set[int]) -> None:
    for task in (PROC / str(pid) / "task").glob("*"):
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except ProcessLookupError:
            pass  # a thread that ended meanwhile


def pin_engine(server_pid: int, engine_cpus: set[int], other_cpus: set[int]) -> dict[int, str]:
    """Pin the engine's processes of the server at `server_pid` to `engine_cpus` and its other
    processes to `other_cpus`. Returns {pid: "engine" | "other"}; raises if no engine process
    was found (not a vLLM server, or not started yet) or a CPU set is empty or names a CPU this
    machine does not have."""
    here = set(range(os.cpu_count() or 1))
    for name, cpus in (("engine_cpus", engine_cpus), ("other_cpus", other_cpus)):
        if not cpus or not set(cpus) <= here:
            raise ValueError(f"{name}: expected CPUs among {sorted(here)}, got {sorted(cpus)}")
    where = {pid: "engine" if _comm(pid).startswith(ENGINE_NAMES) else "other" for pid in process_tree(server_pid)}
    if "engine" not in where.values():  # checked before anything moves
        raise RuntimeError(f"process {server_pid}: no vLLM engine process ({', '.join(ENGINE_NAMES)}) below it")
    for pid, role in where.items():
        _pin_threads(pid, engine_cpus if role == "engine" else other_cpus)
    return where


def pin_self(cpus: set[int]) -> set[int]:
    """Move this process (every thread) to `cpus`; returns the CPUs it had."""
    before = os.sched_getaffinity(0)
    _pin_threads(os.getpid(), cpus)
    return before


def split() -> tuple[set[int], set[int]]:
    """(engine, other): this process's first CPU for the engine, the rest for everything else."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise RuntimeError("pinning needs at least 2 CPUs")
    return {cpus[0]}, set(cpus[1:])


def _cpus(arg: str) -> set[int]:
    out = set()
    for part in arg.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    try:
        if len(argv) == 3:
            engine, other = _cpus(argv[1]), _cpus(argv[2])
        elif len(argv) == 2:
            engine = _cpus(argv[1])
            other = set(os.sched_getaffinity(0)) - engine
        else:
            engine, other = split()
        where = pin_engine(int(argv[0]), engine, other)
    except (RuntimeError, ValueError) as e:
        print(f"cpu_pin: error: {e}", file=sys.stderr)
        return 2
    for pid, role in where.items():
        print(f"{pid} {_comm(pid)}: {role} -> {sorted(engine if role == 'engine' else other)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
