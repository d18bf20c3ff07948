"""Heterogeneous clusters: a hardware profile per instance or pool, per-profile cold start and
scale-out, KV transfer bounded by the slower link, and one profile giving today's runs."""

import pytest

import slocore as s
from simkit import config, profile, requests
from slocore import _core
from slocore.sim import simulate, workloads
from test_sim_invariants import check_conserved


def fast():
    p = profile()
    p.name = "fast"
    return p


def slow():
    p = profile(t_c=0.03, c_p=4e-4, a_d=4e-6, b_d=4e-4)
    p.name = "slow"
    return p


def served_by(res):
    out = {}
    for r in res.recorder.records():
        out[r.instance] = out.get(r.instance, 0) + 1
    return out


def test_one_profile_list_equals_the_single_profile_bit_for_bit():
    reqs = requests(150, rate=40)
    a = _core.simulate(reqs, config(instances=3, noise_sigma=0.1, seed=4))
    b = _core.simulate(reqs, config(instances=3, noise_sigma=0.1, seed=4, instance_profiles=[profile()] * 3))
    assert [list(r.token_times) for r in a.recorder.records()] == [list(r.token_times) for r in b.recorder.records()]
    w = workloads.hfx_4task(rate=30, n_per_task=50, seed=1)
    one = simulate(w, profile="h100-llama2-7b", instances=2, global_policy="goroute")
    two = simulate(w, profile=["h100-llama2-7b"] * 2, global_policy="goroute")
    assert one.summary == two.summary


@pytest.mark.parametrize("policy", ["least_outstanding", "goroute", "kv_router"])
def test_instance_aware_policies_send_more_to_the_fast_instances(policy):
    reqs = requests(400, rate=60, prompt=(100, 600), output=(10, 60), ttft=2, tpot=0.2)
    cfg = config(instances=4, policy=policy, instance_profiles=[fast(), fast(), slow(), slow()])
    res = _core.simulate(reqs, cfg)
    check_conserved(reqs, res)
    by = served_by(res)
    assert by.get(0, 0) + by.get(1, 0) > 1.3 * (by.get(2, 0) + by.get(3, 0))
    rr = served_by(_core.simulate(reqs, config(instances=4, instance_profiles=[fast(), fast(), slow(), slow()])))
    assert abs(rr[0] + rr[1] - rr[2] - rr[3]) <= 2  # blind round robin splits evenly


def test_each_instance_runs_at_its_own_speed():
    r = [s.Request(i, 0.0, 100, output_len=1, ttft=10, tpot=10) for i in range(2)]
    res = _core.simulate(r, config(instances=2, instance_profiles=[fast(), slow()]))
    t = {rec.instance: rec.token_times[0] for rec in res.recorder.records()}
    assert t[0] == pytest.approx(0.01 + 100 * 1e-4) and t[1] == pytest.approx(0.03 + 100 * 4e-4)


def test_pd_transfer_uses_the_slower_link_and_pools_take_lists():
    p_fast, d_slow_link = fast(), fast()
    d_slow_link.name = "slow_link"
    d_slow_link.kv_bandwidth_bytes_per_s = 1e8
    d_slow_link.kv_fixed_s = 0.005
    reqs = [s.Request(0, 0.0, 64, output_len=2, ttft=10, tpot=10)]
    cfg = config(
        disaggregated=True,
        prefill_instances=1,
        decode_instances=1,
        prefill_profiles=[p_fast],
        decode_profiles=[d_slow_link],
    )
    cfg.prefill_policy = _core.make_global_policy("round_robin")
    cfg.decode_policy = _core.make_global_policy("round_robin")
    t = list(_core.simulate(reqs, cfg).recorder.records()[0].token_times)
    transfer = max(0.002, 0.005) + 64 * 1e5 / 1e8
    assert t[1] - t[0] == pytest.approx(transfer + 0.01 + 64 * 1e-6 + 1e-4, rel=1e-9)
    assert _core.kv_transfer_time(p_fast, d_slow_link, 64) == pytest.approx(transfer)
    assert _core.kv_transfer_time(p_fast, p_fast, 64) == p_fast.kv_transfer_time(64)


class NamedScaleOut(s.Scaler):
    def __init__(self, name):
        super().__init__()
        self.profile, self.ticks = name, 0

    def name(self):
        return "named"

    def decide(self, now, views):
        self.ticks += 1
        return [s.ScaleDecision(s.ScaleAction.SCALE_OUT, profile=self.profile)] if self.ticks == 1 else []


def test_scaler_names_the_profile_it_adds_and_cold_start_is_per_profile():
    extra = slow()
    extra.cold_start_s = 2.5
    reqs = requests(300, rate=30)
    cfg = config(instances=1, max_instances=2, scaler=NamedScaleOut("slow"), cold_start_s=0.5, scale_profiles=[extra])
    res = _core.simulate(reqs, cfg)
    check_conserved(reqs, res)
    firsts = [r.token_times[0] for r in res.recorder.records() if r.instance == 1]
    assert firsts and min(firsts) >= 1.0 + 2.5  # tick at 1 s, the slow profile's cold start
    with pytest.raises(ValueError, match="decision.profile"):
        _core.simulate(reqs, config(instances=1, max_instances=2, scaler=NamedScaleOut("nope")))


def test_profile_lists_are_validated():
    with pytest.raises(ValueError, match="instance_profiles"):
        _core.simulate(requests(3), config(instances=2, instance_profiles=[profile()]))
    with pytest.raises(ValueError, match="profile"):
        simulate(workloads.uniform_random(n=5), profile=["h100-llama2-7b"] * 2, instances=3)
    res = simulate(
        workloads.uniform_random(n=40, rate=20),
        mode="pd",
        prefill_profile=["h100-llama2-7b"] * 2,
        decode_profile="h100-llama2-7b",
        decode_instances=3,
    )
    assert res.config["prefill_instances"] == 2 and res.config["decode_instances"] == 3
    assert res.summary["finished"] == 40


def test_cli_takes_one_profile_per_instance(capsys):
    from slocore import cli

    args = [
        "simulate",
        "--quiet",
        "--json",
        "--variants",
        "least_outstanding",
        "--loads",
        "30",
        "--profile",
        "h100-llama2-7b,rtx4060ti-chatglm2-6b-int4",
    ]
    assert cli.main(args) == 0
    assert "rtx4060ti-chatglm2-6b-int4" in capsys.readouterr().out


def test_sibyl_runs_on_mixed_instances():
    # Colocated SIBYL with no handoff estimate from the caller takes the per-candidate branch
    # of Alg. 1 lines 2-3 on mixed instances (each candidate's own prefill estimate).
    reqs = requests(200, rate=30, prompt=(100, 600), output=(5, 40), ttft=5, tpot=1)
    res = _core.simulate(reqs, config(instances=2, policy="sibyl", instance_profiles=[fast(), slow()]))
    check_conserved(reqs, res)
    assert res.stats["plan_violations"] == 0
