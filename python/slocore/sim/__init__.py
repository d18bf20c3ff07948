"""The simulator's Python face: workloads, traces, the runner, scenarios and reports.
The event loop itself is C++ (csrc/slocore/sim); see slocore.sim.runner.simulate."""

from slocore.sim import workloads
from slocore.sim.runner import SimResult, simulate
from slocore.sim.stacks import preset, presets
from slocore.sim.traces import load_trace

__all__ = ["SimResult", "simulate", "workloads", "load_trace", "preset", "presets"]
