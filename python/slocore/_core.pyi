"""
slocore C++ core: SLO-aware scheduling policies, metrics and the cluster simulator
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['ApproxPrefixIndex', 'Assignment', 'BatchItem', 'BatchLatencyCurve', 'BatchPlan', 'BatchScheduler', 'BlockSet', 'DecodeMask', 'EngineModel', 'FitResult', 'GlobalPolicy', 'HardwareProfile', 'InstanceView', 'LatencyCoeffs', 'LatencyModel', 'MetricsOptions', 'OnlineFit', 'Outcome', 'PrefixCache', 'PrefixLookup', 'PriorityMapper', 'Recorder', 'RecordingPolicy', 'Request', 'RequestMetrics', 'RequestRecord', 'RequestState', 'Role', 'ScaleAction', 'ScaleDecision', 'Scaler', 'ScheduledItem', 'SibylProjectedLoad', 'SimConfig', 'SimResult', 'Slo', 'SloPendingQueue', 'SloPrediction', 'SurvivalEstimator', 'ThroughputCurve', 'TimelinePoint', 'TpsQuadratic', 'ViewChanges', 'batch_scheduler_names', 'copy_request', 'expected_handoff', 'fit_relative_least_squares', 'global_policy_names', 'hfx_admission_p', 'hfx_assigned_slos', 'hfx_cold_start_seconds', 'hfx_cold_start_table', 'hfx_kv_load', 'hfx_last_budget', 'hfx_maturity', 'hfx_maturity_time', 'hfx_scaler_indicators', 'hfx_token_budget', 'id_block_segments', 'kv_transfer_time', 'make_batch_scheduler', 'make_global_policy', 'make_scaler', 'match_blocks_many', 'policy_info', 'prefix_block_hashes', 'prompt_block_hashes', 'request_metrics', 'requests_from_columns', 'scaler_names', 'select_slice_tasks', 'simulate', 'slice_period_eq7', 'slice_rate', 'slice_utility_rate', 'slide_max_chunk', 'slo_predict_rescan', 'summarize', 'tdg_token_deadline', 'tdg_token_weight', 'token_id_prompt']
class Role:
    """
    Members:
    
      COLOCATED
    
      PREFILL
    
      DECODE
    """
    COLOCATED: typing.ClassVar[Role]
    DECODE: typing.ClassVar[Role]
    PREFILL: typing.ClassVar[Role]
    __members__: typing.ClassVar[dict[str, Role]]
    @typing.overload
    def __eq__(self, other: Role) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: Role) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class Outcome:
    """
    Members:
    
      PENDING
    
      FINISHED
    
      REJECTED
    """
    FINISHED: typing.ClassVar[Outcome]
    PENDING: typing.ClassVar[Outcome]
    REJECTED: typing.ClassVar[Outcome]
    __members__: typing.ClassVar[dict[str, Outcome]]
    @typing.overload
    def __eq__(self, other: Outcome) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: Outcome) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class Slo:
    def __init__(self, ttft: typing.SupportsFloat | typing.SupportsIndex = ..., tpot: typing.SupportsFloat | typing.SupportsIndex = ..., deadline: typing.SupportsFloat | typing.SupportsIndex | None = None) -> None:
        ...
    @property
    def deadline(self) -> float | None:
        ...
    @deadline.setter
    def deadline(self, arg0: typing.SupportsFloat | typing.SupportsIndex | None) -> None:
        ...
    @property
    def tpot(self) -> float:
        ...
    @tpot.setter
    def tpot(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def ttft(self) -> float:
        ...
    @ttft.setter
    def ttft(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class Request:
    slo: Slo
    task: str
    def __init__(self, id: typing.SupportsInt | typing.SupportsIndex, arrival: typing.SupportsFloat | typing.SupportsIndex, prompt_len: typing.SupportsInt | typing.SupportsIndex, *, output_len: typing.SupportsInt | typing.SupportsIndex | None = None, expected_output_len: typing.SupportsInt | typing.SupportsIndex | None = None, max_output_len: typing.SupportsInt | typing.SupportsIndex | None = None, ttft: typing.SupportsFloat | typing.SupportsIndex = ..., tpot: typing.SupportsFloat | typing.SupportsIndex = ..., deadline: typing.SupportsFloat | typing.SupportsIndex | None = None, priority: typing.SupportsInt | typing.SupportsIndex = 0, priority_weight: typing.SupportsFloat | typing.SupportsIndex = 1.0, utility: typing.SupportsFloat | typing.SupportsIndex = 1.0, task: str = '', prefix: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]] = []) -> None:
        ...
    def __repr__(self) -> str:
        ...
    def validate(self) -> None:
        ...
    @property
    def arrival(self) -> float:
        ...
    @arrival.setter
    def arrival(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def expected_output_len(self) -> int | None:
        ...
    @expected_output_len.setter
    def expected_output_len(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def id(self) -> int:
        ...
    @id.setter
    def id(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_output_len(self) -> int | None:
        ...
    @max_output_len.setter
    def max_output_len(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def output_len(self) -> int | None:
        ...
    @output_len.setter
    def output_len(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def prefix(self) -> list[tuple[int, int]]:
        """
        prompt segments (group, len) of shared texts (core/prefix.h); empty: no identity
        """
    @prefix.setter
    def prefix(self, arg1: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> None:
        ...
    @property
    def priority(self) -> int:
        ...
    @priority.setter
    def priority(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def priority_weight(self) -> float:
        ...
    @priority_weight.setter
    def priority_weight(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def prompt_len(self) -> int:
        ...
    @prompt_len.setter
    def prompt_len(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def realtime(self) -> bool:
        ...
    @property
    def utility(self) -> float:
        ...
    @utility.setter
    def utility(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class RequestState:
    request: Request
    def __init__(self, request: Request, computed: typing.SupportsInt | typing.SupportsIndex = 0, generated: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    @property
    def cached(self) -> int:
        ...
    @cached.setter
    def cached(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def computed(self) -> int:
        ...
    @computed.setter
    def computed(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def context_len(self) -> int:
        ...
    @property
    def first_token(self) -> float:
        ...
    @first_token.setter
    def first_token(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def generated(self) -> int:
        ...
    @generated.setter
    def generated(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def in_prefill(self) -> bool:
        ...
    @property
    def last_token(self) -> float:
        ...
    @last_token.setter
    def last_token(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def num_tokens(self) -> int:
        ...
    @property
    def shared(self) -> int:
        ...
    @shared.setter
    def shared(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def to_compute(self) -> int:
        ...
class LatencyCoeffs:
    def __init__(self, t_c: typing.SupportsFloat | typing.SupportsIndex = 0.0, a_p: typing.SupportsFloat | typing.SupportsIndex = 0.0, b_p: typing.SupportsFloat | typing.SupportsIndex = 0.0, c_p: typing.SupportsFloat | typing.SupportsIndex = 0.0, a_d: typing.SupportsFloat | typing.SupportsIndex = 0.0, b_d: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> None:
        ...
    def validate(self) -> None:
        ...
    @property
    def a_d(self) -> float:
        ...
    @a_d.setter
    def a_d(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def a_p(self) -> float:
        ...
    @a_p.setter
    def a_p(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def b_d(self) -> float:
        ...
    @b_d.setter
    def b_d(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def b_p(self) -> float:
        ...
    @b_p.setter
    def b_p(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def c_p(self) -> float:
        ...
    @c_p.setter
    def c_p(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def t_c(self) -> float:
        ...
    @t_c.setter
    def t_c(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class BatchItem:
    prefill: bool
    def __init__(self, lq: typing.SupportsInt | typing.SupportsIndex = 1, lkv: typing.SupportsInt | typing.SupportsIndex = 0, prefill: bool = False) -> None:
        ...
    @property
    def lkv(self) -> int:
        ...
    @lkv.setter
    def lkv(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def lq(self) -> int:
        ...
    @lq.setter
    def lq(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class LatencyModel:
    @typing.overload
    def __init__(self) -> None:
        ...
    @typing.overload
    def __init__(self, coeffs: LatencyCoeffs, theta: typing.SupportsFloat | typing.SupportsIndex = 0.9) -> None:
        ...
    def batch_time(self, items: collections.abc.Sequence[BatchItem]) -> float:
        ...
    def decode_cost(self, lkv: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def observe(self, real_s: typing.SupportsFloat | typing.SupportsIndex, predicted_s: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def overhead(self) -> float:
        ...
    def prefill_cost(self, lq: typing.SupportsInt | typing.SupportsIndex, lkv: typing.SupportsInt | typing.SupportsIndex = 0) -> float:
        ...
    def set_coeffs(self, coeffs: LatencyCoeffs) -> None:
        ...
    def set_correction(self, beta: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def stage_decode(self, sum_cur_len: typing.SupportsFloat | typing.SupportsIndex, batch: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def stage_prefill(self, sum_len: typing.SupportsFloat | typing.SupportsIndex, sum_len_sq: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def update(self) -> None:
        ...
    @property
    def coeffs(self) -> LatencyCoeffs:
        ...
    @property
    def correction(self) -> float:
        ...
    @property
    def theta(self) -> float:
        ...
class OnlineFit:
    """
    Online refit of the latency coefficients from observed iterations (csrc/slocore/core/online_fit.h)
    """
    @staticmethod
    def features(items: collections.abc.Sequence[BatchItem]) -> typing.Annotated[list[float], "FixedSize(6)"]:
        ...
    def __init__(self, prior: LatencyCoeffs, forget: typing.SupportsFloat | typing.SupportsIndex = 0.997, ridge: typing.SupportsFloat | typing.SupportsIndex = 0.1) -> None:
        ...
    def observe(self, x: typing.Annotated[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], "FixedSize(6)"], real_s: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def solve(self) -> LatencyCoeffs:
        ...
    @property
    def observations(self) -> float:
        ...
class BatchLatencyCurve:
    @staticmethod
    def from_model(model: LatencyModel, ctx: typing.SupportsInt | typing.SupportsIndex, max_batch: typing.SupportsInt | typing.SupportsIndex) -> BatchLatencyCurve:
        ...
    def __call__(self, b: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def __init__(self, batch_sizes: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], latencies: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
    @property
    def batch_sizes(self) -> list[float]:
        ...
    @property
    def latencies(self) -> list[float]:
        ...
class ThroughputCurve:
    def __init__(self, a: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, c: typing.SupportsFloat | typing.SupportsIndex, floor_tps: typing.SupportsFloat | typing.SupportsIndex = 1.0) -> None:
        ...
    def per_request(self, n: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def total(self, n: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    @property
    def a(self) -> float:
        ...
    @property
    def b(self) -> float:
        ...
    @property
    def c(self) -> float:
        ...
class ViewChanges:
    """
    what an engine changed in a view since it last called its scheduler (the simulator's engine fills it; since_epoch 0: not known)
    """
    def __init__(self) -> None:
        ...
    @property
    def admitted(self) -> list[int]:
        ...
    @admitted.setter
    def admitted(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def preempted(self) -> list[int]:
        ...
    @preempted.setter
    def preempted(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def progressed(self) -> list[int]:
        ...
    @progressed.setter
    def progressed(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def since_epoch(self) -> int:
        ...
    @since_epoch.setter
    def since_epoch(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class InstanceView:
    accepting: bool
    changes: ViewChanges
    first_token_at_decode: bool
    model: LatencyModel
    role: Role
    def __init__(self, id: typing.SupportsInt | typing.SupportsIndex, role: Role = ...) -> None:
        ...
    def blocks_for(self, tokens: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def blocks_needed(self, state: RequestState, k: typing.SupportsInt | typing.SupportsIndex, is_running: bool) -> int:
        ...
    def cached_prefix_tokens(self, request: Request, source: str = 'auto') -> int:
        """
        leading prompt tokens of `request` this instance holds (precise: the engine's cache; approximate: what the router sent here; auto: precise when known)
        """
    def validate(self) -> None:
        """
        ValueError naming the field unless the view is valid (also: request ids unique)
        """
    @property
    def block_size(self) -> int:
        ...
    @block_size.setter
    def block_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def busy_until(self) -> float:
        ...
    @busy_until.setter
    def busy_until(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def epoch(self) -> int:
        ...
    @epoch.setter
    def epoch(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def id(self) -> int:
        ...
    @id.setter
    def id(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_blocks_free(self) -> int:
        ...
    @kv_blocks_free.setter
    def kv_blocks_free(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_blocks_total(self) -> int:
        ...
    @kv_blocks_total.setter
    def kv_blocks_total(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_utilization(self) -> float:
        ...
    @property
    def max_batch_tokens(self) -> int:
        ...
    @max_batch_tokens.setter
    def max_batch_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_num_seqs(self) -> int:
        ...
    @max_num_seqs.setter
    def max_num_seqs(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def num_requests(self) -> int:
        ...
    @property
    def prefix_cache(self) -> ...:
        """
        the engine's real prefix cache (precise), or None
        """
    @prefix_cache.setter
    def prefix_cache(self, arg1: ...) -> None:
        ...
    @property
    def prefix_index(self) -> ...:
        """
        the router's index of what it sent here (approximate), or None
        """
    @prefix_index.setter
    def prefix_index(self, arg1: ...) -> None:
        ...
    @property
    def running(self) -> list[RequestState]:
        ...
    @running.setter
    def running(self, arg1: collections.abc.Sequence[RequestState]) -> None:
        ...
    @property
    def waiting(self) -> list[RequestState]:
        ...
    @waiting.setter
    def waiting(self, arg1: collections.abc.Sequence[RequestState]) -> None:
        ...
class PrefixLookup:
    def match_blocks(self, chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> int:
        ...
class BlockSet(PrefixLookup):
    """
    an engine's reported cached blocks (precise)
    """
    def __init__(self) -> None:
        ...
    def __len__(self) -> int:
        ...
    def add(self, hashes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    def clear(self) -> None:
        ...
    def match_blocks(self, chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> int:
        ...
    def remove(self, hashes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
class ApproxPrefixIndex(PrefixLookup):
    def __init__(self, capacity_blocks: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __len__(self) -> int:
        ...
    def match_blocks(self, chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> int:
        ...
    def record(self, chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def capacity(self) -> int:
        ...
class TpsQuadratic:
    def __init__(self, a: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, c: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def a(self) -> float:
        ...
    @a.setter
    def a(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def b(self) -> float:
        ...
    @b.setter
    def b(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def c(self) -> float:
        ...
    @c.setter
    def c(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class HardwareProfile:
    coeffs: LatencyCoeffs
    name: str
    tps: TpsQuadratic | None
    def __init__(self) -> None:
        ...
    def kv_transfer_time(self, tokens: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def validate(self) -> None:
        ...
    @property
    def block_size(self) -> int:
        ...
    @block_size.setter
    def block_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def cold_start_s(self) -> float:
        ...
    @cold_start_s.setter
    def cold_start_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_bandwidth_bytes_per_s(self) -> float:
        ...
    @kv_bandwidth_bytes_per_s.setter
    def kv_bandwidth_bytes_per_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_blocks(self) -> int:
        ...
    @kv_blocks.setter
    def kv_blocks(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_bytes_per_token(self) -> float:
        ...
    @kv_bytes_per_token.setter
    def kv_bytes_per_token(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_fixed_s(self) -> float:
        ...
    @kv_fixed_s.setter
    def kv_fixed_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class RequestRecord:
    @property
    def end_time(self) -> float:
        ...
    @property
    def instance(self) -> int:
        ...
    @property
    def outcome(self) -> Outcome:
        ...
    @property
    def reason(self) -> str:
        ...
    @property
    def request(self) -> Request:
        ...
    @property
    def token_times(self) -> numpy.typing.NDArray[numpy.float64]:
        ...
class Recorder:
    def __contains__(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    def __init__(self) -> None:
        ...
    def __len__(self) -> int:
        ...
    def add(self, request: Request) -> None:
        ...
    def add_instance_time(self, seconds: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def finish(self, id: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def get(self, id: typing.SupportsInt | typing.SupportsIndex) -> RequestRecord:
        ...
    def records(self) -> list[RequestRecord]:
        ...
    def reject(self, id: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsFloat | typing.SupportsIndex, reason: str) -> None:
        ...
    def token(self, id: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsFloat | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex = -1) -> None:
        ...
    @property
    def instance_seconds(self) -> float:
        ...
    @property
    def total_tokens(self) -> int:
        ...
class MetricsOptions:
    def __init__(self, w_prefill: typing.SupportsFloat | typing.SupportsIndex = 1.0, w_decode: typing.SupportsFloat | typing.SupportsIndex = 1.0, cost_unit_s: typing.SupportsFloat | typing.SupportsIndex = 0.05, quantiles: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [0.5, 0.9, 0.99, 0.999], warmup_s: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> None:
        ...
    @property
    def cost_unit_s(self) -> float:
        ...
    @cost_unit_s.setter
    def cost_unit_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def quantiles(self) -> list[float]:
        ...
    @quantiles.setter
    def quantiles(self, arg0: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
    @property
    def w_decode(self) -> float:
        ...
    @w_decode.setter
    def w_decode(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def w_prefill(self) -> float:
        ...
    @w_prefill.setter
    def w_prefill(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def warmup_s(self) -> float:
        ...
    @warmup_s.setter
    def warmup_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class RequestMetrics:
    @property
    def deadline_met(self) -> bool:
        ...
    @property
    def e2e(self) -> float:
        ...
    @property
    def id(self) -> int:
        ...
    @property
    def slo_met(self) -> bool:
        ...
    @property
    def tdg(self) -> float:
        ...
    @property
    def tdg_ideal(self) -> float:
        ...
    @property
    def tokens(self) -> int:
        ...
    @property
    def tpot(self) -> float:
        ...
    @property
    def tpot_met(self) -> bool:
        ...
    @property
    def ttft(self) -> float:
        ...
    @property
    def ttft_met(self) -> bool:
        ...
class FitResult:
    @property
    def coeffs(self) -> list[float]:
        ...
    @property
    def max_rel_error(self) -> float:
        ...
    @property
    def rms_rel_error(self) -> float:
        ...
class Assignment:
    def __init__(self, request: typing.SupportsInt | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def instance(self) -> int:
        ...
    @instance.setter
    def instance(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def request(self) -> int:
        ...
    @request.setter
    def request(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class GlobalPolicy:
    def __init__(self) -> None:
        ...
    def early_assignment(self) -> bool:
        ...
    def name(self) -> str:
        ...
    def next_wakeup(self) -> float:
        ...
    def on_cancelled(self, request: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_finished(self, request: typing.SupportsInt | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_instance_added(self, instance: typing.SupportsInt | typing.SupportsIndex, role: Role, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_instance_removed(self, instance: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_prefill_done(self, request: typing.SupportsInt | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_token(self, request: typing.SupportsInt | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex, generated: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def params(self) -> dict[str, float | str]:
        ...
    def pending(self) -> int:
        ...
    def poll(self, now: typing.SupportsFloat | typing.SupportsIndex, views: collections.abc.Sequence[InstanceView]) -> list[Assignment]:
        ...
    def submit(self, request: Request, now: typing.SupportsFloat | typing.SupportsIndex, expected_handoff: typing.SupportsFloat | typing.SupportsIndex = ...) -> None:
        ...
class RecordingPolicy(GlobalPolicy):
    def clear(self) -> None:
        ...
    def events(self) -> list:
        """
        Every call received: (kind, request, instance, generated, now, expected_handoff) tuples.
        """
class ScheduledItem:
    def __init__(self, request: typing.SupportsInt | typing.SupportsIndex, tokens: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        ...
    @property
    def request(self) -> int:
        ...
    @request.setter
    def request(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def tokens(self) -> int:
        ...
    @tokens.setter
    def tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class BatchPlan:
    def __init__(self, items: collections.abc.Sequence[ScheduledItem] = [], preempt: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = []) -> None:
        ...
    @property
    def items(self) -> list[ScheduledItem]:
        ...
    @items.setter
    def items(self, arg0: collections.abc.Sequence[ScheduledItem]) -> None:
        ...
    @property
    def preempt(self) -> list[int]:
        ...
    @preempt.setter
    def preempt(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
class BatchScheduler:
    def __init__(self) -> None:
        ...
    def name(self) -> str:
        ...
    def on_batch_done(self, engine: InstanceView, plan: BatchPlan, predicted_s: typing.SupportsFloat | typing.SupportsIndex, actual_s: typing.SupportsFloat | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_finished(self, request: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def params(self) -> dict[str, float | str]:
        ...
    def schedule(self, engine: InstanceView, now: typing.SupportsFloat | typing.SupportsIndex) -> BatchPlan:
        ...
class ScaleAction:
    """
    Members:
    
      SCALE_OUT
    
      SCALE_IN
    
      SWITCH_ROLE
    """
    SCALE_IN: typing.ClassVar[ScaleAction]
    SCALE_OUT: typing.ClassVar[ScaleAction]
    SWITCH_ROLE: typing.ClassVar[ScaleAction]
    __members__: typing.ClassVar[dict[str, ScaleAction]]
    @typing.overload
    def __eq__(self, other: ScaleAction) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: ScaleAction) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class ScaleDecision:
    action: ScaleAction
    profile: str
    role: Role
    def __init__(self, action: ScaleAction, role: Role = ..., instance: typing.SupportsInt | typing.SupportsIndex = -1, profile: str = '') -> None:
        ...
    @property
    def instance(self) -> int:
        ...
    @instance.setter
    def instance(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class Scaler:
    def __init__(self) -> None:
        ...
    def decide(self, now: typing.SupportsFloat | typing.SupportsIndex, views: collections.abc.Sequence[InstanceView]) -> list[ScaleDecision]:
        ...
    def interval(self) -> float:
        ...
    def name(self) -> str:
        ...
    def on_arrival(self, request: Request, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_finished(self, request: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def on_first_token(self, request: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def params(self) -> dict[str, float | str]:
        ...
class SimConfig:
    batch_scheduler: collections.abc.Callable[[], BatchScheduler]
    belief: LatencyCoeffs | None
    decode_batch_scheduler: collections.abc.Callable[[], BatchScheduler]
    decode_policy: GlobalPolicy
    disaggregated: bool
    global_policy: GlobalPolicy
    online_fit: bool
    pd_first_token_at_decode: bool
    prefill_policy: GlobalPolicy
    prefix_caching: bool
    processor_sharing: bool
    profile: HardwareProfile
    scaler: Scaler
    def __init__(self) -> None:
        ...
    def validate(self) -> None:
        ...
    @property
    def belief_noise(self) -> float:
        ...
    @belief_noise.setter
    def belief_noise(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def belief_scale(self) -> float:
        ...
    @belief_scale.setter
    def belief_scale(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def cold_start_s(self) -> float:
        ...
    @cold_start_s.setter
    def cold_start_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def correction_window(self) -> int:
        ...
    @correction_window.setter
    def correction_window(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def decode_instances(self) -> int:
        ...
    @decode_instances.setter
    def decode_instances(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def decode_profiles(self) -> list[HardwareProfile]:
        ...
    @decode_profiles.setter
    def decode_profiles(self, arg0: collections.abc.Sequence[HardwareProfile]) -> None:
        ...
    @property
    def instance_profiles(self) -> list[HardwareProfile]:
        ...
    @instance_profiles.setter
    def instance_profiles(self, arg0: collections.abc.Sequence[HardwareProfile]) -> None:
        ...
    @property
    def instances(self) -> int:
        ...
    @instances.setter
    def instances(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_batch_tokens(self) -> int:
        ...
    @max_batch_tokens.setter
    def max_batch_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_instances(self) -> int:
        ...
    @max_instances.setter
    def max_instances(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_num_seqs(self) -> int:
        ...
    @max_num_seqs.setter
    def max_num_seqs(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_time(self) -> float:
        ...
    @max_time.setter
    def max_time(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def min_instances(self) -> int:
        ...
    @min_instances.setter
    def min_instances(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def noise_sigma(self) -> float:
        ...
    @noise_sigma.setter
    def noise_sigma(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def prefill_instances(self) -> int:
        ...
    @prefill_instances.setter
    def prefill_instances(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def prefill_profiles(self) -> list[HardwareProfile]:
        ...
    @prefill_profiles.setter
    def prefill_profiles(self, arg0: collections.abc.Sequence[HardwareProfile]) -> None:
        ...
    @property
    def role_switch_s(self) -> float:
        ...
    @role_switch_s.setter
    def role_switch_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def scale_profiles(self) -> list[HardwareProfile]:
        ...
    @scale_profiles.setter
    def scale_profiles(self, arg0: collections.abc.Sequence[HardwareProfile]) -> None:
        ...
    @property
    def seed(self) -> int:
        ...
    @seed.setter
    def seed(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def stall_timeout_s(self) -> float:
        ...
    @stall_timeout_s.setter
    def stall_timeout_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def timeline_interval_s(self) -> float:
        ...
    @timeline_interval_s.setter
    def timeline_interval_s(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class TimelinePoint:
    @property
    def colocated(self) -> int:
        ...
    @property
    def decode(self) -> int:
        ...
    @property
    def prefill(self) -> int:
        ...
    @property
    def queued(self) -> int:
        ...
    @property
    def running(self) -> int:
        ...
    @property
    def starting(self) -> int:
        ...
    @property
    def t(self) -> float:
        ...
    @property
    def waiting(self) -> int:
        ...
class SimResult:
    @property
    def recorder(self) -> Recorder:
        ...
    @property
    def stats(self) -> dict:
        ...
    @property
    def timeline(self) -> list[TimelinePoint]:
        ...
class EngineModel:
    """
    One simulator engine (csrc/slocore/sim/engine.h) stepped by the caller: same planning, plan sanitising, online correction, on_batch_done and iteration times.
    """
    def __init__(self, profile: HardwareProfile, scheduler: BatchScheduler, max_batch_tokens: typing.SupportsInt | typing.SupportsIndex = 8192, max_num_seqs: typing.SupportsInt | typing.SupportsIndex = 256, kv_blocks: typing.SupportsInt | typing.SupportsIndex = 0, belief: LatencyCoeffs | None = None, correction_window: typing.SupportsInt | typing.SupportsIndex = 32, noise_sigma: typing.SupportsFloat | typing.SupportsIndex = 0.0, seed: typing.SupportsInt | typing.SupportsIndex = 0, role: Role = ..., processor_sharing: bool = False, online_fit: bool = False) -> None:
        ...
    def add(self, state: RequestState) -> None:
        """
        Queue a request (waiting) on the engine.
        """
    def cancel(self, request: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> bool:
        ...
    def finish(self, now: typing.SupportsFloat | typing.SupportsIndex) -> tuple[list[tuple[int, int]], list[int], list[int]]:
        """
        End the iteration at `now`: ([(request, generated)], finished ids, handed-off ids).
        """
    def start(self, now: typing.SupportsFloat | typing.SupportsIndex) -> float:
        """
        Plan the next iteration at `now`; its duration in seconds, < 0 when nothing can run.
        """
    @property
    def busy(self) -> bool:
        ...
    @property
    def has_work(self) -> bool:
        ...
    @property
    def iterations(self) -> int:
        ...
    @property
    def plan(self) -> BatchPlan:
        ...
    @property
    def preemptions(self) -> int:
        ...
    @property
    def view(self) -> InstanceView:
        ...
    @property
    def violations(self) -> int:
        ...
class PrefixCache(PrefixLookup):
    """
    one engine's block-level prefix cache (csrc/slocore/sim/prefix_cache.h)
    """
    def __init__(self) -> None:
        ...
    def __len__(self) -> int:
        ...
    def acquire(self, h: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    def evict_lru(self) -> bool:
        ...
    def free_queue(self) -> list[int]:
        ...
    def insert(self, h: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    def match_blocks(self, chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> int:
        ...
    def refs(self, h: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def release(self, h: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    @property
    def cached_free(self) -> int:
        ...
    @property
    def evictions(self) -> int:
        ...
class PriorityMapper:
    """
    HFX Alg. 2 / Eq. 6 priority-to-SLO mapper.
    """
    def __init__(self, *, window: typing.SupportsInt | typing.SupportsIndex = 200, ttft_base: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [0.7, 1.0, 2.0, 20.0], tpot_base: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [0.5, 0.7, 0.9, 1.0], spread: typing.SupportsFloat | typing.SupportsIndex = 0.25, relaxed_min: typing.SupportsFloat | typing.SupportsIndex = 0.5, queue_correction: bool = True) -> None:
        ...
    def __len__(self) -> int:
        ...
    def bounds_tpot(self, priority: typing.SupportsInt | typing.SupportsIndex) -> tuple[float, float]:
        ...
    def bounds_ttft(self, priority: typing.SupportsInt | typing.SupportsIndex) -> tuple[float, float]:
        ...
    def counts(self) -> list[int]:
        ...
    def index(self, priority: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def map(self, priority: typing.SupportsInt | typing.SupportsIndex, higher_pending: bool) -> tuple[float, float]:
        ...
    def on_dispatch(self, priority: typing.SupportsInt | typing.SupportsIndex, queue_time: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def record(self, priority: typing.SupportsInt | typing.SupportsIndex, ttft: typing.SupportsFloat | typing.SupportsIndex, queue_time: typing.SupportsFloat | typing.SupportsIndex, tpot: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class DecodeMask:
    def __init__(self, rates: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], spread: bool = False) -> None:
        ...
    def at(self, row: typing.SupportsInt | typing.SupportsIndex, col: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    def column(self, col: typing.SupportsInt | typing.SupportsIndex) -> list[int]:
        """
        input positions of the tasks decoded in column `col`
        """
    def period(self, latency: BatchLatencyCurve) -> float:
        """
        sum over columns of l(|column|) (Eq. 7)
        """
    def row_task(self, row: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    @property
    def cols(self) -> int:
        ...
    @property
    def rows(self) -> int:
        ...
class SurvivalEstimator:
    """
    SIBYL Eq. 3-4: bucketed EMA survival function, O(log B) update
    """
    def __init__(self, bucket: typing.SupportsInt | typing.SupportsIndex = 64, alpha: typing.SupportsFloat | typing.SupportsIndex = 0.99, max_len: typing.SupportsInt | typing.SupportsIndex = 32768) -> None:
        ...
    def conditional(self, l_from: typing.SupportsFloat | typing.SupportsIndex, l_to: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def observe(self, final_len: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def survival(self, length: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def values(self) -> list[float]:
        ...
    @property
    def alpha(self) -> float:
        ...
    @property
    def bucket(self) -> int:
        ...
    @property
    def buckets(self) -> int:
        ...
    @property
    def observations(self) -> int:
        ...
class SibylProjectedLoad:
    """
    SIBYL Eq. 1/6-8: the request table and the projected load per decode instance
    """
    def __init__(self, bucket: typing.SupportsInt | typing.SupportsIndex = 64, alpha: typing.SupportsFloat | typing.SupportsIndex = 0.99, max_len: typing.SupportsInt | typing.SupportsIndex = 32768, v_sys_init: typing.SupportsFloat | typing.SupportsIndex = 30.0, prob: bool = True, type1: bool = True, type2: bool = True, type3: bool = True, reqlevel: bool = False) -> None:
        ...
    def __len__(self) -> int:
        ...
    def argmin(self, instances: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], now: typing.SupportsFloat | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> tuple[int, list[float]]:
        ...
    def assign(self, request: typing.SupportsInt | typing.SupportsIndex, instance: typing.SupportsInt | typing.SupportsIndex, prompt_len: typing.SupportsInt | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def choose(self, instances: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], now: typing.SupportsFloat | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> int:
        """
        argmin's index as SIBYL's decision computes it, without the loads
        """
    def finish(self, request: typing.SupportsInt | typing.SupportsIndex) -> int:
        ...
    def forget(self, request: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def load(self, instance: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def set_handoff(self, request: typing.SupportsInt | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def terms(self, instance: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex) -> tuple[float, float, float]:
        ...
    def token(self, request: typing.SupportsInt | typing.SupportsIndex, generated: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def tracks(self, request: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
    def v_sys(self) -> float:
        ...
    @property
    def estimator(self) -> SurvivalEstimator:
        ...
class SloPrediction:
    @property
    def cached(self) -> int:
        ...
    @property
    def finish(self) -> float:
        ...
    @property
    def loss(self) -> int:
        ...
    @property
    def outstanding(self) -> int:
        ...
    @property
    def saved(self) -> float:
        ...
    @property
    def slack(self) -> float:
        ...
    @property
    def tpot(self) -> float:
        ...
    @property
    def ttft(self) -> float:
        ...
class SloPendingQueue:
    """
    slo_predict's per-instance queue kept while the view's epoch holds
    """
    def __init__(self) -> None:
        ...
    def predict(self, view: InstanceView, request: Request, cached: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex) -> SloPrediction:
        ...
    def sync(self, fifo: bool, view: InstanceView, extra: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]], poll: typing.SupportsInt | typing.SupportsIndex) -> bool:
        ...
def batch_scheduler_names() -> list[str]:
    ...
def copy_request(request: Request) -> Request:
    """
    a copy of `request`, every field (the router's attempt of a client request: no prefix list through Python)
    """
def expected_handoff(view: InstanceView, request: Request, now: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    The predicted end of the request's prefill on the instance with this view (early assignment).
    """
def fit_relative_least_squares(X: collections.abc.Sequence[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]], y: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> FitResult:
    """
    Least squares on relative error (HFX appendix A).
    """
def global_policy_names() -> list[str]:
    ...
def hfx_admission_p(arrival: typing.SupportsFloat | typing.SupportsIndex, ttft: typing.SupportsFloat | typing.SupportsIndex, prefill_s: typing.SupportsFloat | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex, util: typing.SupportsFloat | typing.SupportsIndex = 0.0, util_exp: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> float:
    """
    HFX Alg. 1 calculate_p: clamp(slack / TTFT, 0, 1) * (1 - util)^util_exp.
    """
def hfx_assigned_slos(policy: GlobalPolicy) -> list[tuple[int, float, float]]:
    """
    (request id, TTFT, TPOT) that an hfx_pm policy assigned, in submit order.
    """
def hfx_cold_start_seconds(model: str, source: str) -> float:
    ...
def hfx_cold_start_table() -> dict[str, dict[str, float]]:
    """
    HFX Table 2: model class -> weight source -> seconds.
    """
def hfx_kv_load(view: InstanceView) -> float:
    """
    HFX scaler indicator 3: (used + reserved KV) / total.
    """
def hfx_last_budget(policy: GlobalPolicy, instance: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    The token budget (decode stage: slots) last computed for `instance`.
    """
def hfx_maturity(policy: GlobalPolicy, instance: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    Maturity time of `instance` in an hfx/hfx_prefill/hfx_migrator policy.
    """
def hfx_maturity_time(now: typing.SupportsFloat | typing.SupportsIndex, e_p: typing.SupportsFloat | typing.SupportsIndex, e_d: typing.SupportsFloat | typing.SupportsIndex, min_tpot: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    HFX Alg. 1 maturity: now + E_p + (E_p / relax) * E_d, relax = min TPOT - E_d.
    """
def hfx_scaler_indicators(scaler: Scaler, stage: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex, views: collections.abc.Sequence[InstanceView]) -> dict:
    """
    The three HFX scaling indicators of one pool (HFX-v2 Sec. 3.3.3).
    """
def hfx_token_budget(ttft: typing.SupportsFloat | typing.SupportsIndex, tpot: typing.SupportsFloat | typing.SupportsIndex, e_d: typing.SupportsFloat | typing.SupportsIndex, a: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    HFX Eq. 5: largest prefill token count that keeps the tightest TTFT/TPOT.
    """
def id_block_segments(ids: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], ids_per_block: typing.SupportsInt | typing.SupportsIndex, tokens_per_block: typing.SupportsInt | typing.SupportsIndex, max_blocks: typing.SupportsInt | typing.SupportsIndex) -> list[tuple[int, int]]:
    """
    prefix segments (group, len) of a prompt known by token ids or characters, one per block (core/prefix.h)
    """
def kv_transfer_time(sender: ..., receiver: ..., tokens: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    seconds to move `tokens` tokens of KV between two instances (the slower link bounds it)
    """
def make_batch_scheduler(name: str, params: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex | str] = {}) -> BatchScheduler:
    ...
def make_global_policy(name: str, params: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex | str] = {}) -> GlobalPolicy:
    """
    A global policy by name; params: dict of str -> float|str. ValueError on unknown names.
    """
def make_scaler(name: str, params: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex | str] = {}) -> Scaler:
    ...
def match_blocks_many(lookups: collections.abc.Sequence[PrefixLookup], chain: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> list[int]:
    """
    leading blocks of `chain` each lookup holds (None: 0), one call
    """
def policy_info(kind: str, name: str) -> dict:
    """
    The registry entry `name` of `kind` (global_policy | batch_scheduler | scaler): {name, summary, params: [{name, type, default, help, range}]}, the one parameter table its factory and params() use.
    """
def prefix_block_hashes(request: Request, block_size: typing.SupportsInt | typing.SupportsIndex, max_tokens: typing.SupportsInt | typing.SupportsIndex) -> list[int]:
    """
    chained hashes of the full blocks among the first max_tokens identified tokens (core/prefix.h)
    """
def prompt_block_hashes(request: Request, block_size: typing.SupportsInt | typing.SupportsIndex) -> list[int]:
    """
    the chain a router looks up: full blocks of the first prompt_len - 1 tokens
    """
def request_metrics(record: RequestRecord, options: MetricsOptions = ...) -> RequestMetrics:
    ...
def requests_from_columns(id: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], arrival: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], prompt_len: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], output_len: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], ttft: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tpot: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], deadline: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], priority: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], priority_weight: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], utility: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], task: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], task_names: collections.abc.Sequence[str], prefix_offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None = None, prefix_groups: typing.Annotated[numpy.typing.ArrayLike, numpy.uint64] | None = None, prefix_lens: typing.Annotated[numpy.typing.ArrayLike, numpy.int64] | None = None) -> list[Request]:
    ...
def scaler_names() -> list[str]:
    ...
def select_slice_tasks(tpots: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], utilities: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], latency: BatchLatencyCurve, max_cycle: typing.SupportsFloat | typing.SupportsIndex = 1.0, spread: bool = False, max_tasks: typing.SupportsInt | typing.SupportsIndex = 1073741824) -> list[int]:
    """
    SLICE Alg. 2: positions of the selected tasks in utility-rate order
    """
def simulate(requests: collections.abc.Sequence[Request], config: SimConfig) -> SimResult:
    """
    Run the discrete-event simulation (see csrc/slocore/sim/simulator.h).
    """
def slice_period_eq7(rates_desc: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], latency: BatchLatencyCurve) -> float:
    """
    SLICE Eq. 7
    """
def slice_rate(tpot: typing.SupportsFloat | typing.SupportsIndex) -> int:
    """
    SLICE v_i = ceil(1/TPOT_i) tokens per cycle
    """
def slice_utility_rate(utility: typing.SupportsFloat | typing.SupportsIndex, tpot: typing.SupportsFloat | typing.SupportsIndex) -> float:
    """
    SLICE Eq. 6: U_i * TPOT_i
    """
def slide_max_chunk(model: LatencyModel, state: RequestState, time_left: typing.SupportsFloat | typing.SupportsIndex) -> int:
    """
    SlideBatching GETMAXCHUNK: the largest prefill chunk whose estimated time fits time_left
    """
def slo_predict_rescan(fifo: bool, view: InstanceView, request: Request, cached: typing.SupportsInt | typing.SupportsIndex, now: typing.SupportsFloat | typing.SupportsIndex, extra: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> SloPrediction:
    """
    slo_predict's prediction for request on view, rebuilt from the view (extra: this poll's placements as (deadline, tokens, cost, context))
    """
def summarize(recorder: Recorder, options: MetricsOptions = ...) -> dict:
    """
    Summary metrics of a recorder as a dict (one definition each; see metrics.h).
    """
def tdg_token_deadline(request: Request, i: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    ProServe Eq. 3: arrival + TTFT + (i-1) * TPOT
    """
def tdg_token_weight(request: Request, i: typing.SupportsInt | typing.SupportsIndex, w_prefill: typing.SupportsFloat | typing.SupportsIndex = 1.0, w_decode: typing.SupportsFloat | typing.SupportsIndex = 1.0) -> float:
    """
    ProServe Eq. 3: w_prio * (w_p if i == 1 else w_d)
    """
def token_id_prompt(ids: typing.Any, block_size: typing.SupportsInt | typing.SupportsIndex, max_blocks: typing.SupportsInt | typing.SupportsIndex) -> typing.Any:
    """
    (min id, max id, id_block_segments(ids, block_size, block_size, max_blocks)) of a non-empty list of exact ints that fit 64 bits, in one pass; None for anything else (serve/token_prompt.h)
    """
