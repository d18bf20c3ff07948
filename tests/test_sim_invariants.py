"""Simulator invariants: no request lost or duplicated, tokens add up, KV never over
capacity (preemption instead), same seed -> identical run, hand-checked timings, P/D
handoff, scaling and stall reporting."""

import pytest

import slocore as s
from simkit import PyFcfs, config, profile, requests
from slocore import _core


def outcomes(res):
    return [r.outcome for r in res.recorder.records()]


def check_conserved(reqs, res):
    recs = {r.request.id: r for r in res.recorder.records()}
    assert sorted(recs) == sorted(r.id for r in reqs)  # none lost, none duplicated
    for r in reqs:
        rec = recs[r.id]
        if rec.outcome == s.Outcome.FINISHED:
            assert len(rec.token_times) == r.output_len  # tokens add up
            assert all(b >= a for a, b in zip(rec.token_times, rec.token_times[1:]))
            assert rec.token_times[0] > r.arrival
        else:
            assert rec.outcome == s.Outcome.REJECTED and rec.reason


def test_all_requests_finish_and_tokens_add_up():
    reqs = requests(200, rate=20)
    res = _core.simulate(reqs, config())
    check_conserved(reqs, res)
    assert outcomes(res).count(s.Outcome.FINISHED) == 200
    assert res.recorder.total_tokens == sum(r.output_len for r in reqs)
    assert res.stats["plan_violations"] == 0 and res.stats["stalled"] == 0


def test_kv_pressure_preempts_instead_of_overflowing():
    # 40 blocks of 16 tokens per instance: far fewer than the load needs at once.
    reqs = requests(120, rate=50, prompt=(64, 200), output=(20, 80))
    res = _core.simulate(reqs, config(profile(kv_blocks=40), instances=1))
    check_conserved(reqs, res)
    assert res.stats["preemptions"] > 0  # pressure was real
    assert res.stats["plan_violations"] == 0  # and never over capacity
    assert outcomes(res).count(s.Outcome.FINISHED) == 120


def test_request_larger_than_kv_is_rejected_not_stalled():
    reqs = requests(5, prompt=(5000, 5001), output=(1, 2))
    res = _core.simulate(reqs, config(profile(kv_blocks=100)))
    assert all(r.reason.startswith("request needs more KV") for r in res.recorder.records())
    assert res.stats["rejected_capacity"] == 5


def test_engine_trims_infeasible_plans_and_counts_them():
    class Greedy(PyFcfs):
        def schedule(self, v, now):  # asks for more than exists, then the real thing
            plan = super().schedule(v, now)
            bogus = [s.ScheduledItem(10**9, 1)] + [s.ScheduledItem(x.request, x.tokens + 10**6) for x in plan.items[:1]]
            return s.BatchPlan(bogus + list(plan.items), list(plan.preempt))

    reqs = requests(30)
    res = _core.simulate(reqs, config(sched=Greedy))
    check_conserved(reqs, res)
    assert res.stats["plan_violations"] > 0
    assert outcomes(res).count(s.Outcome.FINISHED) == 30


def test_same_seed_same_run_and_noise_changes_it():
    reqs = requests(80)
    runs = [_core.simulate(reqs, config(noise_sigma=0.2, seed=seed)) for seed in (1, 1, 2)]
    times = [[list(r.token_times) for r in res.recorder.records()] for res in runs]
    assert times[0] == times[1] and times[0] != times[2]


def test_hand_checked_single_request_timing():
    # One request, prompt 100, 3 output tokens, one instance, t_c 10 ms, c_p 0.1 ms/token,
    # a_d 1 us per cached token, b_d 0.1 ms. Prefill of 100 -> token 1; decodes at ctx 100, 101.
    r = s.Request(0, 1.0, 100, output_len=3, ttft=1, tpot=1)
    res = _core.simulate([r], config(instances=1))
    t = list(res.recorder.records()[0].token_times)
    t1 = 1.0 + 0.01 + 100 * 1e-4
    t2 = t1 + 0.01 + 100 * 1e-6 + 1e-4
    t3 = t2 + 0.01 + 101 * 1e-6 + 1e-4
    assert t == pytest.approx([t1, t2, t3], rel=1e-12)
    summ = s.summarize(res.recorder)
    assert summ["instance_seconds"] == pytest.approx(t3)  # one instance, active until the end


def test_processor_sharing_decode_step_is_n_over_tps():
    # P/D with SIBYL's model: two requests decode together at TPS(2)/2 each.
    a, b, c = -0.423, 44.766, -7.753
    reqs = [s.Request(i, 0.0, 32, output_len=4, ttft=10, tpot=10) for i in range(2)]
    cfg = config(
        profile(tps=(a, b, c), kv_fixed_s=0.0),
        disaggregated=True,
        prefill_instances=1,
        decode_instances=1,
        processor_sharing=True,
    )
    cfg.prefill_policy = _core.make_global_policy("round_robin")
    cfg.decode_policy = _core.make_global_policy("round_robin")
    res = _core.simulate(reqs, cfg)
    check_conserved(reqs, res)
    t = list(res.recorder.records()[0].token_times)
    step = 2 / (a * 4 + b * 2 + c)
    assert t[3] - t[2] == pytest.approx(step, rel=1e-9)


def test_pd_first_token_on_prefill_rest_on_decode_after_transfer():
    reqs = requests(60, rate=20, output=(2, 30))
    cfg = config(disaggregated=True, prefill_instances=2, decode_instances=2)
    cfg.prefill_policy = _core.make_global_policy("round_robin")
    cfg.decode_policy = _core.make_global_policy("least_outstanding")
    res = _core.simulate(reqs, cfg)
    check_conserved(reqs, res)
    assert outcomes(res).count(s.Outcome.FINISHED) == 60
    # Instances 0-1 are prefill, 2-3 decode: the last token comes from a decode instance.
    assert {r.instance for r in res.recorder.records()} <= {2, 3}
    # The second token waits at least for the KV transfer (2 ms fixed + bytes/bandwidth).
    for rec in res.recorder.records():
        tt = rec.token_times
        assert tt[1] - tt[0] >= 0.002 + rec.request.prompt_len * 1e5 / 1e9


class OneShotScaler(s.Scaler):
    """Scales out once at the first tick and in (instance 0) at the third."""

    def __init__(self):
        super().__init__()
        self.ticks = 0

    def name(self):
        return "one_shot"

    def interval(self):
        return 1.0

    def decide(self, now, views):
        self.ticks += 1
        if self.ticks == 1:
            return [s.ScaleDecision(s.ScaleAction.SCALE_OUT)]
        if self.ticks == 3:
            return [s.ScaleDecision(s.ScaleAction.SCALE_IN, s.Role.COLOCATED, 0)]
        return []


def test_scaling_cold_start_drain_and_cost():
    reqs = requests(300, rate=30)
    res = _core.simulate(reqs, config(instances=1, max_instances=2, scaler=OneShotScaler(), cold_start_s=0.5))
    check_conserved(reqs, res)
    st = res.stats
    assert st["scale_outs"] == 1 and st["scale_ins"] == 1 and st["max_instances"] == 2
    # Instance 1 joined at 1.0 + 0.5 s: no token from it before then.
    firsts = [r.token_times[0] for r in res.recorder.records() if r.instance == 1]
    assert firsts and min(firsts) >= 1.5
    # Cost: instance 0 until it drained (~3 s) plus instance 1 from t=1 (cold start counted).
    end = st["end_time"]
    assert res.recorder.instance_seconds < 1 * end + (end - 1.0) + 1e-9
    assert res.recorder.instance_seconds > (end - 1.0)
    tl = res.timeline
    assert max(p.colocated for p in tl) == 2 and any(p.starting == 1 for p in tl)


def test_scale_out_capped_by_max_instances():
    reqs = requests(50)
    res = _core.simulate(reqs, config(instances=1, max_instances=1, scaler=OneShotScaler()))
    assert res.stats["scale_outs"] == 0


def test_policy_that_never_places_is_reported_not_lost():
    class Hoarder(s.GlobalPolicy):
        def __init__(self):
            super().__init__()
            self.q = []

        def name(self):
            return "hoarder"

        def submit(self, r, now, expected_handoff):
            self.q.append(r.id)

        def poll(self, now, views):
            return []

        def pending(self):
            return len(self.q)

    reqs = requests(10)
    res = _core.simulate(reqs, config(policy=Hoarder()))
    assert res.stats["stalled"] == 10
    assert all(r.reason.startswith("stalled") for r in res.recorder.records())


def test_policy_placing_on_unknown_instance_raises_value_error():
    class Wrong(s.GlobalPolicy):
        def name(self):
            return "wrong"

        def submit(self, r, now, expected_handoff):
            self.r = r.id

        def poll(self, now, views):
            return [s.Assignment(self.r, 99)]

        def pending(self):
            return 1

    with pytest.raises(ValueError, match="instance 99"):
        _core.simulate(requests(1), config(policy=Wrong()))


def test_bad_config_and_requests():
    with pytest.raises(ValueError, match="instances"):
        _core.simulate(requests(3), config(instances=0))
    with pytest.raises(ValueError, match="output_len"):
        _core.simulate([s.Request(0, 0.0, 10)], config())
    unsorted = [s.Request(0, 5.0, 10, output_len=1), s.Request(1, 1.0, 10, output_len=1)]
    with pytest.raises(ValueError, match="sorted"):
        _core.simulate(unsorted, config())
    with pytest.raises(ValueError, match="processor_sharing"):
        _core.simulate(requests(3), config(processor_sharing=True))


@pytest.mark.parametrize(
    "workload, kw, error, message",
    [
        (None, {}, TypeError, "workload: expected a Workload"),
        ("trace.csv", {}, TypeError, "workload: expected a Workload"),
        ("ok", {"seed": -1}, ValueError, "seed: must be in"),
        ("ok", {"seed": 1.5}, TypeError, "seed: must be an integer"),
        ("ok", {"instances": 2.5}, TypeError, "instances: must be an integer"),
        ("ok", {"instances": True}, TypeError, "instances: must be an integer"),
        ("ok", {"max_num_seqs": 0}, ValueError, "max_num_seqs: must be in"),
        ("ok", {"prefix_caching": "yes"}, TypeError, "prefix_caching: must be True or False"),
    ],
)
def test_simulate_names_the_bad_argument(workload, kw, error, message):
    """simulate() checks its arguments before the binding, whose own errors name no field
    (a negative seed gave pybind11's "incompatible function arguments")."""
    from slocore.sim import simulate, workloads

    w = workloads.hfx_4task(rate=10, n_per_task=2, seed=0) if workload == "ok" else workload
    with pytest.raises(error, match=message):
        simulate(w, **kw)


def test_max_time_cuts_the_run_and_reports_it():
    reqs = requests(100, rate=5)
    res = _core.simulate(reqs, config(max_time=3.0))
    check_conserved(reqs, res)
    assert any(r.reason == "simulation time limit" for r in res.recorder.records())
