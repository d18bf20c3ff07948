"""slocore: an SLO-aware scheduling core for LLM serving.

The policies, metrics and simulator live in the C++ extension ``slocore._core``; this
package re-exports its types and adds the Python face (workloads, CLI, serving glue).
See DESIGN.md for the architecture and README.md for a first run.
"""
from slocore._core import (
    Assignment,
    BatchItem,
    BatchLatencyCurve,
    BatchPlan,
    BatchScheduler,
    FitResult,
    GlobalPolicy,
    HardwareProfile,
    InstanceView,
    LatencyCoeffs,
    LatencyModel,
    MetricsOptions,
    Outcome,
    Recorder,
    Request,
    RequestMetrics,
    RequestRecord,
    RequestState,
    Role,
    ScaleAction,
    ScaleDecision,
    Scaler,
    ScheduledItem,
    Slo,
    ThroughputCurve,
    TpsQuadratic,
    fit_relative_least_squares,
    request_metrics,
    summarize,
)

__version__ = "0.1.0"
