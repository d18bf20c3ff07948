"""slocore: an SLO-aware scheduling core for LLM serving.

The policies, metrics and simulator live in the C++ extension ``slocore._core``; this
package re-exports its types and adds the Python face (workloads, CLI, serving glue).
See docs/design.md for the architecture and README.md for a first run.
"""

from slocore._core import (
    Assignment,
    BatchItem,
    BatchLatencyCurve,
    BatchPlan,
    BatchScheduler,
    DecodeMask,
    EngineModel,
    FitResult,
    GlobalPolicy,
    HardwareProfile,
    InstanceView,
    LatencyCoeffs,
    LatencyModel,
    MetricsOptions,
    OnlineFit,
    Outcome,
    PriorityMapper,
    Recorder,
    RecordingPolicy,
    Request,
    RequestMetrics,
    RequestRecord,
    RequestState,
    Role,
    ScaleAction,
    ScaleDecision,
    Scaler,
    ScheduledItem,
    SimConfig,
    Slo,
    ThroughputCurve,
    TimelinePoint,
    TpsQuadratic,
    ViewChanges,
    batch_scheduler_names,
    expected_handoff,
    fit_relative_least_squares,
    global_policy_names,
    make_batch_scheduler,
    make_global_policy,
    make_scaler,
    policy_info,
    request_metrics,
    requests_from_columns,
    scaler_names,
    select_slice_tasks,
    summarize,
)

__version__ = "0.1.0"
