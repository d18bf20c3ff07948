"""Checks of the vLLM scheduler plugin against vLLM's real V1 Scheduler, in-process.

Run by tests/test_serve_vllm.py with an interpreter that has vLLM (this one, or
$SLOCORE_VLLM_PYTHON): ``python tests/vllm_scheduler_checks.py MODEL_DIR``.
"""

import sys
import types

import slocore
from slocore.integrations.vllm.scheduler import SlocoreScheduler, default_scheduler_name, kv_role_of
from slocore.integrations.vllm.testing import make_request, make_scheduler, step


def run_to_end(s, max_steps=500):
    steps = []
    while s.has_requests() and len(steps) < max_steps:
        so, _ = step(s)
        steps.append(dict(so.num_scheduled_tokens))
    assert not s.has_requests(), "requests left unfinished"
    return steps


def check_same_as_vllm_for_fcfs(model):
    """sarathi_fcfs with vLLM's budget decides what vLLM itself decides on a simple load."""
    outs = []
    for cls, cfg in (
        (None, None),
        (SlocoreScheduler, {"slocore": {"batch_scheduler": "sarathi_fcfs", "params": {"token_budget": 512}}}),
    ):
        s = make_scheduler(model, cls, additional_config=cfg)
        for i in range(4):
            s.add_request(make_request(40 + i, 5))
        outs.append([sorted(x.values()) for x in run_to_end(s)])
    assert outs[0] == outs[1], outs


def check_token_budget_and_every_request_finishes(model):
    s = make_scheduler(
        model,
        SlocoreScheduler,
        additional_config={"slocore": {"batch_scheduler": "sarathi_fcfs", "params": {"token_budget": 64}}},
    )
    assert s.batch.name() == "sarathi_fcfs"
    reqs = [make_request(100, 8) for _ in range(5)]
    for r in reqs:
        s.add_request(r)
    steps = run_to_end(s)
    assert max(sum(x.values()) for x in steps) <= 64, "the slocore token budget caps every step"
    done = {r.request_id: r.num_output_tokens for r in reqs}
    assert all(n == 8 for n in done.values()), done
    assert s.slocore_stats["steps"] > 0


def check_slo_fields_reach_the_view(model):
    s = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"batch_scheduler": "edf"}})
    r = make_request(20, 3, extra_args={"slo_ttft_ms": 250, "slo_tpot_ms": 40, "priority": 1, "task": "chat"})
    s.add_request(r)
    seen = []
    real = s.batch

    class Spy:
        def schedule(self, view, now):
            seen.extend(
                (st.request.slo.ttft, st.request.slo.tpot, st.request.priority, st.request.task) for st in view.waiting
            )
            return real.schedule(view, now)

    s.batch = Spy()
    step(s)
    assert seen == [(0.25, 0.04, 1, "chat")], seen


def check_skipped_decode_keeps_kv_and_counts_against_max_seqs(model):
    """A plan that leaves running requests out (a SLICE-style decode mask) skips their decode
    this step; they keep their KV blocks and still finish."""
    s = make_scheduler(
        model, SlocoreScheduler, max_num_seqs=3, additional_config={"slocore": {"batch_scheduler": "sarathi_fcfs"}}
    )
    real = s.batch
    mask = {"on": False}

    class EveryOther:
        def schedule(self, view, now):
            plan = real.schedule(view, now)
            if not mask["on"]:
                return plan
            run_ids = {st.request.id for st in view.running}
            items = [it for it in plan.items if it.request not in run_ids or it.request % 2 == 0]
            return types.SimpleNamespace(items=items, preempt=[])

    s.batch = EveryOther()
    reqs = [make_request(30, 6) for _ in range(3)]
    for r in reqs:
        s.add_request(r)
    step(s)  # prefill all three
    blocks_before = {r.request_id: len(s.kv_cache_manager.get_block_ids(r.request_id)[0]) for r in reqs}
    mask["on"] = True
    extra = make_request(30, 2)  # must not be admitted: the three masked/running still hold max_num_seqs
    s.add_request(extra)
    so, _ = step(s)
    ids = {s._sid(r): r.request_id for r in reqs}
    even = {ids[k] for k in ids if k % 2 == 0}
    assert set(so.num_scheduled_tokens) == even, (so.num_scheduled_tokens, even)
    assert len(s.running) == 3 and extra.request_id not in so.num_scheduled_tokens
    for r in reqs:
        assert len(s.kv_cache_manager.get_block_ids(r.request_id)[0]) >= blocks_before[r.request_id]
    assert s.slocore_stats["skipped_running"] >= 1
    mask["on"] = False
    run_to_end(s)
    assert all(r.num_output_tokens == 6 for r in reqs) and extra.num_output_tokens == 2


def check_every_registered_batch_scheduler_finishes(model):
    """Whatever this build registers (slide_batching, slice... as they land) drives vLLM to the end."""
    for name in slocore.batch_scheduler_names():
        s = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"batch_scheduler": name}})
        reqs = [make_request(60 + 10 * i, 6, extra_args={"slo_tpot_ms": 50 + i, "priority": i % 2}) for i in range(6)]
        for r in reqs:
            s.add_request(r)
        run_to_end(s)
        assert all(r.num_output_tokens == 6 for r in reqs), name


def check_full_batch_with_waiting_requests_finishes(model):
    """max_num_seqs full and requests waiting: a plan that skips running requests to admit
    waiting ones (which cannot start) must not stall the engine (EDF, SlideBatching did)."""
    for name in slocore.batch_scheduler_names():
        cfg = {"slocore": {"batch_scheduler": name}}
        s = make_scheduler(model, SlocoreScheduler, max_num_seqs=4, additional_config=cfg)
        reqs = [make_request(16, 40, extra_args={"slo_tpot_ms": 30, "slo_ttft_ms": 300}) for _ in range(8)]
        for r in reqs:
            s.add_request(r)
        run_to_end(s, max_steps=2000)
        assert all(r.num_output_tokens == 40 for r in reqs), name


def check_online_fit_learns_the_steps(model):
    """The plugin refits its latency model to vLLM's steps (on by default): with a clock that
    advances by an Ascend 910B's step time and the H100 profile as the prior, the model ends
    up predicting those steps; off, it keeps the profile."""
    from slocore.profiles import hardware_profile

    truth = slocore.LatencyModel(hardware_profile("ascend910b-qwen7b")[0].coeffs)
    off = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"online_fit": False}})
    assert off.step_fit is None
    s = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"batch_scheduler": "slo_triage"}})
    assert s.step_fit is not None
    now, seen = [0.0], []
    s.step_fit.clock = lambda: now[0]

    def run_model(so):
        items = []
        for rid, n in so.num_scheduled_tokens.items():
            r = s.requests[rid]
            before = r.num_computed_tokens - n
            items.append(slocore.BatchItem(n, before, n > 1 or before < r.num_prompt_tokens))
        if items:  # a step that runs nothing is not timed
            now[0] += truth.batch_time(items)
            seen.append(items)

    for i in range(96):
        s.add_request(make_request(16 + 37 * (i % 17), 4 + 3 * (i % 9)))
    while s.has_requests():
        step(s, on_scheduled=run_model)
    assert s.step_fit.steps == len(seen) >= 64, (s.step_fit.steps, len(seen))
    late = seen[len(seen) // 2 :]
    prior = slocore.LatencyModel(hardware_profile("h100-llama2-7b")[0].coeffs)

    def rms(m):
        return (sum((m.batch_time(b) / truth.batch_time(b) - 1) ** 2 for b in late) / len(late)) ** 0.5

    assert rms(s.latency_model) < 0.03 and rms(prior) > 0.3, (rms(s.latency_model), rms(prior))


def check_finished_requests_reach_on_finished(model):
    """Every request that leaves vLLM reaches the batch scheduler's on_finished with its slocore
    id, as in the simulator's engine (slo_triage measures the KV they free from it)."""
    s = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"batch_scheduler": "slo_triage"}})
    real, done = s.batch, []

    class Spy:
        def schedule(self, view, now):
            return real.schedule(view, now)

        def on_finished(self, rid, now):
            done.append(rid)
            real.on_finished(rid, now)

    s.batch = Spy()
    reqs = [make_request(30 + i, 4) for i in range(3)]
    for r in reqs:
        s.add_request(r)
    run_to_end(s)
    assert sorted(done) == sorted(s._ids[r.request_id] for r in reqs), done


def check_every_view_matches_vllms_queues(model):
    """Each step's view holds vLLM's running and waiting requests as they are then (progress,
    prompt, SLOs, one stable id each, the first token's time once there is one), through
    preemptions and finishes: the plugin builds a request's slocore Request once and its
    progress every step."""
    s = make_scheduler(
        model,
        SlocoreScheduler,
        num_blocks=24,  # 384 tokens of KV for 6 x 60-token prompts growing to 100: vLLM preempts
        additional_config={"slocore": {"batch_scheduler": "slo_triage"}},
    )
    real, mismatches, steps, firsts = s.batch, [], [0], {}

    def expect(r):
        ea = r.sampling_params.extra_args
        return (
            s._ids[r.request_id],
            r.num_prompt_tokens,
            min(r.num_computed_tokens, r.num_tokens),
            r.num_output_tokens,
            ea["slo_ttft_ms"] / 1e3,
            ea["priority"],
        )

    def got(st):
        q = st.request
        return (q.id, q.prompt_len, st.computed, st.generated, q.slo.ttft, q.priority)

    class Spy:
        def schedule(self, view, now):
            steps[0] += 1
            for seen, queue in ((view.running, s.running), (view.waiting, s.waiting)):
                want = [expect(r) for r in queue]
                if [got(st) for st in seen] != want:
                    mismatches.append((steps[0], [got(st) for st in seen], want))
                for st in seen:  # a first token is dated once, after arrival, and kept through preemption
                    if st.generated:
                        t = firsts.setdefault(st.request.id, st.first_token)
                        if not (st.request.arrival <= st.first_token <= now and st.first_token == t):
                            mismatches.append((steps[0], "first token", st.request.id, st.first_token, t, now))
                    elif st.first_token == st.first_token:  # not NaN: dated without a token
                        mismatches.append((steps[0], "first token without a token", st.request.id))
            return real.schedule(view, now)

        def on_finished(self, rid, now):
            real.on_finished(rid, now)

    s.batch = Spy()
    reqs = [make_request(60, 40, extra_args={"slo_ttft_ms": 500 + 100 * i, "priority": i % 2}) for i in range(6)]
    for r in reqs:
        s.add_request(r)
    run_to_end(s)
    assert not mismatches, mismatches[:2]
    assert sum(r.num_preemptions for r in reqs) > 0, "the check needs a preemption"
    assert len(firsts) == len(reqs), "every request's first token was dated"
    assert {r.num_output_tokens for r in reqs} == {40}


def check_decode_instance_sees_handoffs_as_the_simulator_does(model):
    """On a P/D decode instance the view has the decode role and a handoff (the router's
    ``slo_handoff_ttft_ms``) is what the simulator's decode engine holds: prompt computed,
    token 1 generated, first token dated at its arrival here, client arrival the handoff's
    TTFT earlier; once vLLM samples here, vLLM's counts, same first token. The step's budget
    still lets vLLM compute the prompt (no connector here: all of it), and the freshest
    handoff goes first (slo_triage's decode queue). Without the role setting the view is
    colocated and the field marks nothing (a client could send it): fresh requests, arrival
    order."""
    roles = {
        None: "colocated",
        ("ExampleConnector", "kv_consumer"): "decode",
        ("ExampleConnector", "kv_producer"): "prefill",
        ("NixlConnector", "kv_both"): "colocated",
    }
    for kv, want in roles.items():
        cfg = types.SimpleNamespace(kv_transfer_config=kv and types.SimpleNamespace(kv_connector=kv[0], kv_role=kv[1]))
        assert kv_role_of(cfg) == want, (kv, kv_role_of(cfg))
    for role_set in (True, False):
        cfg = {"slocore": {"batch_scheduler": "slo_triage", **({"role": "decode"} if role_set else {})}}
        s = make_scheduler(model, SlocoreScheduler, additional_config=cfg)
        seen = spy_views(s)
        old = make_request(48, 4, extra_args={"slo_handoff_ttft_ms": 300, "slo_tpot_ms": 50}, arrival=1000.0)
        new = make_request(48, 4, extra_args={"slo_handoff_ttft_ms": 300, "slo_tpot_ms": 50}, arrival=1000.5)
        s.add_request(old)
        s.add_request(new)
        so, _ = step(s)
        role, waiting, _, at_decode = seen[0]
        io, inew = s._ids[old.request_id], s._ids[new.request_id]
        assert so.num_scheduled_tokens == {old.request_id: 48, new.request_id: 48}, so.num_scheduled_tokens
        step(s)
        _, _, running, _ = seen[1]
        order = [r.req_id for r in so.scheduled_new_reqs]
        if role_set:
            assert role == "DECODE" and at_decode, (role, at_decode)  # vLLM's proxy: token 1 from here
            assert waiting == [(io, 48, 1, 1000.0, 999.7), (inew, 48, 1, 1000.5, 1000.2)], waiting
            # the freshest handoff first: both TTFT deadlines (client arrival + 2 s) passed
            # long ago on the plugin's clock
            assert order == [new.request_id, old.request_id], "the freshest handoff first"
            assert sorted(running) == sorted([(io, 48, 1, 1000.0), (inew, 48, 1, 1000.5)]), running
        else:
            assert role == "COLOCATED" and not at_decode, (role, at_decode)
            assert [w[:3] for w in waiting] == [(io, 0, 0), (inew, 0, 0)], waiting
            assert [w[4] for w in waiting] == [1000.0, 1000.5], waiting
            assert order == [old.request_id, new.request_id], "arrival order"
        run_to_end(s)
        assert old.num_output_tokens == new.num_output_tokens == 4


def spy_views(s) -> list:
    """Wrap s's batch scheduler; returns the list each step's (role, waiting, running,
    first_token_at_decode) goes to."""
    real, seen = s.batch, []

    class Spy:
        def schedule(self, view, now):
            waiting = [(q.request.id, q.computed, q.generated, q.first_token, q.request.arrival) for q in view.waiting]
            running = [(q.request.id, q.computed, q.generated, q.first_token) for q in view.running]
            seen.append((view.role.name, waiting, running, view.first_token_at_decode))
            return real.schedule(view, now)

        def on_finished(self, rid, now):
            real.on_finished(rid, now)

    s.batch = Spy()
    return seen


def check_hostile_extra_args_never_stop_the_engine(model):
    """SLO fields come from clients (``vllm_xargs``): values that are not usable become the
    defaults (priority 0, the default TTFT), a negative priority (vLLM's own field allows it)
    is level 0, and every request finishes. Before, ``priority: "abc"`` or ``-1`` raised
    inside vLLM's scheduler loop, which stops the engine."""
    from vllm.v1.request import Request

    from slocore.integrations.vllm.scheduler import DEFAULT_TTFT_S
    from slocore.integrations.xargs import MAX_PRIORITY

    bad = [
        ({"priority": "abc"}, 0),
        ({"priority": [1]}, 0),
        ({"priority": float("nan")}, 0),
        ({"priority": True}, 0),
        ({"priority": -1}, 0),
        ({"priority": 2**62}, MAX_PRIORITY),
        ({"priority": "2"}, 2),
        ({"slo_ttft_ms": "soon", "task": {"a": 1}}, 0),
        ({"slo_ttft_ms": -5, "slo_deadline_ms": "x", "task": "t" * 10_000}, 0),
    ]
    s = make_scheduler(model, SlocoreScheduler, additional_config={"slocore": {"batch_scheduler": "slo_triage"}})
    reqs = [make_request(20 + i, 3, extra_args=ea) for i, (ea, _) in enumerate(bad)]
    native = make_request(30, 3)
    native.priority = -5  # vLLM's own priority field, lower first, negative allowed
    assert isinstance(native, Request)
    for r in reqs + [native]:
        s.add_request(r)
    step(s)
    got = {rid: q for rid, q in s._reqs.items()}
    for r, (ea, prio) in zip(reqs, bad, strict=True):
        q = got[r.request_id]
        assert q.priority == prio, (ea, q.priority)
        if "slo_ttft_ms" in ea:
            assert q.slo.ttft == DEFAULT_TTFT_S, (ea, q.slo.ttft)
        assert len(q.task) <= 128
    assert got[native.request_id].priority == 0
    run_to_end(s)
    assert all(r.num_output_tokens == 3 for r in reqs + [native])


def check_a_failing_batch_scheduler_leaves_the_step_to_vllm(model):
    """If the slocore scheduler raises, or its plan names a request that is not in the view
    (or one twice), vLLM's own scheduler runs that step: the engine keeps serving and the
    failure is counted."""
    s = make_scheduler(model, SlocoreScheduler)
    real, calls, bad = s.batch, [0], [0]

    class Flaky:
        def schedule(self, view, now):
            calls[0] += 1
            if calls[0] % 4 == 1:
                bad[0] += 1
                raise RuntimeError("boom")
            if calls[0] % 4 == 2:  # a request no view holds
                bad[0] += 1
                return slocore.BatchPlan([slocore.ScheduledItem(10**9, 1)], [])
            if calls[0] % 4 == 3 and view.running:  # one request twice
                bad[0] += 1
                rid = view.running[0].request.id
                return slocore.BatchPlan([slocore.ScheduledItem(rid, 1), slocore.ScheduledItem(rid, 1)], [])
            return real.schedule(view, now)

    s.batch = Flaky()
    reqs = [make_request(40, 5) for _ in range(3)]
    for r in reqs:
        s.add_request(r)
    run_to_end(s)
    assert all(r.num_output_tokens == 5 for r in reqs)
    assert s.slocore_stats["fallback_steps"] == bad[0] >= 3 and s.slocore_stats["steps"] >= 1, (bad, s.slocore_stats)


def check_plugin_logs_its_cost(model):
    """Every REPORT_STEPS steps the log says what the plugin's view and plan cost per step."""
    import logging

    import slocore.integrations.vllm.scheduler as plugin

    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    h, saved, level = Keep(), plugin.REPORT_STEPS, plugin.logger.level
    plugin.logger.addHandler(h)
    plugin.logger.setLevel(logging.INFO)
    plugin.REPORT_STEPS = 4
    try:
        s = make_scheduler(model, SlocoreScheduler)
        for _ in range(3):
            s.add_request(make_request(40, 6))
        run_to_end(s)
    finally:
        plugin.REPORT_STEPS = saved
        plugin.logger.setLevel(level)
        plugin.logger.removeHandler(h)
    cost = [x for x in lines if x.startswith("slocore plugin after 4 steps: view + plan ")]
    assert cost and " us per step (mean)" in cost[0], lines


def check_long_runs_forget_finished_requests(model):
    """Requests keep arriving while others finish: the plugin forgets finished requests' ids
    (both ways), Requests and kept views, yet the requests it still holds keep their ids and
    every one finishes; the plan is matched back to vLLM's queues by those ids throughout."""
    s = make_scheduler(model, SlocoreScheduler, max_num_seqs=8)
    reqs, peak = [], 0
    for wave in range(20):  # 200 requests, 10 at a time, six steps apart: most finish in between
        for _ in range(10):
            reqs.append(make_request(30 + wave, 4))
            s.add_request(reqs[-1])
        for _ in range(6):
            step(s)
            peak = max(peak, len(s._ids))
            assert s._rid_of == {v: k for k, v in s._ids.items()}, "the ids, both ways"
            assert all(r.request_id in s._ids for r in list(s.running) + list(s.waiting)), "a held request lost its id"
    run_to_end(s)
    assert all(r.num_output_tokens == 4 for r in reqs), [r.num_output_tokens for r in reqs]
    assert peak < len(reqs), ("finished requests were never forgotten", peak)
    assert not s._reqs and not s._last and not s._first, "state of finished requests kept"


def check_default_name(model):
    n = default_scheduler_name()
    assert n in slocore.batch_scheduler_names()
    assert n == "slo_triage", n  # the slocore preset's engine scheduler
    s = make_scheduler(model, SlocoreScheduler)  # no config: the plugin runs it
    assert s.batch.name() == "slo_triage" and s.slocore_settings["online_fit"]


CHECKS = [
    check_same_as_vllm_for_fcfs,
    check_token_budget_and_every_request_finishes,
    check_slo_fields_reach_the_view,
    check_skipped_decode_keeps_kv_and_counts_against_max_seqs,
    check_every_registered_batch_scheduler_finishes,
    check_full_batch_with_waiting_requests_finishes,
    check_online_fit_learns_the_steps,
    check_finished_requests_reach_on_finished,
    check_every_view_matches_vllms_queues,
    check_long_runs_forget_finished_requests,
    check_decode_instance_sees_handoffs_as_the_simulator_does,
    check_plugin_logs_its_cost,
    check_hostile_extra_args_never_stop_the_engine,
    check_a_failing_batch_scheduler_leaves_the_step_to_vllm,
]

if __name__ == "__main__":
    model = sys.argv[1]
    check_default_name(model)
    for c in CHECKS:
        c(model)
        print(f"ok {c.__name__}", flush=True)
    print("ALL OK")
