"""twin/cpu_wait.py: the kernel's run-queue wait of a process tree (Linux schedstat)."""

import os
import subprocess
import sys
import time

import pytest

from slocore.twin import cpu_wait

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="no schedstat (not Linux)")

CORE = min(os.sched_getaffinity(0))
HOG = f"import os; os.sched_setaffinity(0, {{{CORE}}})\nwhile True: pass"
PARENT = (
    "import subprocess, sys, time\n"
    f"for _ in range(3): subprocess.Popen([sys.executable, '-c', {HOG!r}])\n"
    "time.sleep(60)"
)


def test_three_hogs_on_one_core_wait_for_it():
    # A parent with three busy children pinned to one core: each gets about a third of it,
    # so the busiest waits about two thirds of its runnable time, whatever else runs here.
    parent = subprocess.Popen([sys.executable, "-c", PARENT], start_new_session=True)
    try:
        deadline = time.time() + 30
        while len(cpu_wait.snapshot(parent.pid) or {}) < 4 and time.time() < deadline:
            time.sleep(0.1)
        before = cpu_wait.snapshot(parent.pid)
        assert len(before) == 4, before  # the parent and its three children
        time.sleep(1.5)
        share = cpu_wait.waited_share(before, cpu_wait.snapshot(parent.pid))
        assert 0.3 < share < 1.0, share
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()


def test_no_pid_or_no_process_gives_none():
    assert cpu_wait.snapshot(None) is None
    assert cpu_wait.waited_share(None, {}) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert cpu_wait.snapshot(dead.pid) is None
