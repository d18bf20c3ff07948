"""How long an engine's processes waited for a CPU during a measurement (Linux only).

A timing measured while the engine sat runnable on a run queue measures the machine, not
the engine: on a small shared host the load generator, the API server and other jobs take
the engine's core. The kernel counts that wait per thread in `/proc/<pid>/task/<tid>/schedstat`
(time on a CPU, time waiting on a run queue, in ns); a snapshot before and after a run gives,
for the engine's busiest process, the share of its runnable time spent waiting.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _children(pid: int) -> list[int]:
    out = []
    for task in (PROC / str(pid) / "task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def process_tree(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.append(p)
            todo += _children(p)
    return seen


def _process_times(pid: int) -> tuple[int, int] | None:
    """(ns on a CPU, ns runnable but waiting) summed over the process's threads."""
    run = wait = 0
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended
        run, wait = run + int(fields[0]), wait + int(fields[1])
    return run, wait


def snapshot(pid: int | None) -> dict[int, tuple[int, int]] | None:
    """Per process of pid's tree: (run ns, wait ns); None where schedstat is unavailable."""
    if pid is None or not (PROC / str(os.getpid()) / "schedstat").exists():
        return None
    snap = {p: t for p in process_tree(pid) if (t := _process_times(p)) is not None}
    return snap or None


def waited_share(before: dict | None, after: dict | None) -> float | None:
    """Share of its runnable time the busiest process of the tree (the one that ran longest
    between the snapshots: the engine core that runs the steps, not the API server) spent
    waiting for a CPU: 0 never waited, 0.5 waited as long as it ran. None without snapshots."""
    if before is None or after is None:
        return None
    run, wait = max(
        ((r1 - before.get(pid, (0, 0))[0], w1 - before.get(pid, (0, 0))[1]) for pid, (r1, w1) in after.items()),
        default=(0, 0),
    )
    return wait / (run + wait) if run + wait > 0 else None
