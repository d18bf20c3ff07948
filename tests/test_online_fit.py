"""The online refit of the latency coefficients (csrc/slocore/core/online_fit.h) against its
pure-Python reference, what it recovers, and the simulator's engine using it."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slocore
from slocore import _core, sim
from slocore.profiles import hardware_profile
from slocore.reference import latency as ref_latency
from slocore.reference import online_fit as ref

NAMES = ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d")
ASCEND = {
    "t_c": 0.023875,
    "a_p": 1.60307e-09,
    "b_p": 3.20613e-09,
    "c_p": 0.000121725,
    "a_d": 5.97333e-08,
    "b_d": 2.4345e-05,
}
H100 = {
    "t_c": 0.00786517,
    "a_p": 5.30119e-10,
    "b_p": 1.06024e-09,
    "c_p": 2.72599e-05,
    "a_d": 2.08672e-07,
    "b_d": 8.17796e-06,
}


def coeffs(d):
    c = _core.LatencyCoeffs()
    for k, v in d.items():
        setattr(c, k, v)
    return c


def as_dict(c):
    return {k: getattr(c, k) for k in NAMES}


ASCEND = as_dict(hardware_profile("ascend910b-qwen7b")[0].coeffs)
H100 = as_dict(hardware_profile("h100-llama2-7b")[0].coeffs)


def truth_time(d, items):
    t = d["t_c"]
    for lq, lkv, prefill in items:
        t += d["a_p"] * lq * lq + d["b_p"] * lq * lkv + d["c_p"] * lq if prefill else d["a_d"] * lkv + d["b_d"]
    return t


def random_batch(rng):
    items = [
        (rng.choice((16, 64, 256, 512, 1024, 2048)), rng.randrange(0, 1024), True) for _ in range(rng.randrange(0, 3))
    ]
    items += [(1, rng.randrange(16, 4096), False) for _ in range(rng.randrange(0 if items else 1, 64))]
    return items


batches = st.lists(st.tuples(st.integers(1, 4096), st.integers(0, 8192), st.booleans()), min_size=0, max_size=12)
coeff_values = st.one_of(st.just(0.0), st.floats(1e-10, 1e-2))


@settings(max_examples=150, deadline=None)
@given(
    prior=st.fixed_dictionaries({k: coeff_values for k in NAMES}),
    truth=st.fixed_dictionaries({k: st.floats(1e-10, 1e-2) for k in NAMES}),
    its=st.lists(batches, min_size=0, max_size=40),
    forget=st.floats(0.5, 1.0),
    ridge=st.floats(1e-3, 10.0),
)
def test_cxx_matches_reference(prior, truth, its, forget, ridge):
    fc = _core.OnlineFit(coeffs(prior), forget=forget, ridge=ridge)
    fp = ref.OnlineFit(ref_latency.Coeffs(**prior), forget=forget, ridge=ridge)
    for items in its:
        x = _core.OnlineFit.features([_core.BatchItem(lq, lkv, p) for lq, lkv, p in items])
        assert list(x) == pytest.approx(ref.features(items), rel=1e-12)
        y = truth_time(truth, items)
        fc.observe(x, y)
        fp.observe(ref.features(items), y)
    assert fc.observations == pytest.approx(fp.observations, rel=1e-9)
    got, want = as_dict(fc.solve()), vars(fp.solve())
    for k in NAMES:
        assert got[k] >= 0.0
        assert got[k] == pytest.approx(want[k], rel=1e-6, abs=1e-6 * max(want.values()) + 1e-300)
        if prior[k] == 0.0:
            assert got[k] == 0.0  # a zero prior stays zero


def test_recovers_another_profiles_shape():
    """A belief of the wrong shape (H100's coefficients on an Ascend 910B: decode KV reads
    3.5x too dear against the rest) converges to the truth; one factor cannot get there."""
    rng = random.Random(0)
    fit = _core.OnlineFit(coeffs(H100), forget=0.997, ridge=0.1)
    scalar = ref_latency.LatencyModel(ref_latency.Coeffs(**H100))
    held_out = [random_batch(rng) for _ in range(200)]
    for _ in range(3000):
        items = random_batch(rng)
        y = truth_time(ASCEND, items)
        fit.observe(_core.OnlineFit.features([_core.BatchItem(*i) for i in items]), y)
        scalar.observe(y, scalar.batch_time(items))
        scalar.update()
    learned = as_dict(fit.solve())
    # These batches identify t_c and c_p; a_d and b_d only together (each decode reads about
    # the same context), a_p and b_p hardly: those stay near the scaled prior, and what counts
    # is the prediction of batches not seen.
    for k in ("t_c", "c_p"):
        assert learned[k] == pytest.approx(ASCEND[k], rel=0.05), k

    def rms(predict):
        return math.sqrt(sum((predict(b) / truth_time(ASCEND, b) - 1) ** 2 for b in held_out) / len(held_out))

    err_fit = rms(lambda b: truth_time(learned, b))
    err_scalar = rms(scalar.batch_time)
    assert err_fit < 0.02 < err_scalar


def test_an_exact_belief_stays_exact_and_bad_input_fails_clearly():
    fit = _core.OnlineFit(coeffs(ASCEND))
    assert as_dict(fit.solve()) == pytest.approx(ASCEND, rel=1e-12)  # no data: the prior
    rng = random.Random(1)
    for _ in range(100):
        items = random_batch(rng)
        fit.observe(_core.OnlineFit.features([_core.BatchItem(*i) for i in items]), truth_time(ASCEND, items))
    assert as_dict(fit.solve()) == pytest.approx(ASCEND, rel=1e-9)
    with pytest.raises(ValueError, match="forget"):
        _core.OnlineFit(coeffs(ASCEND), forget=0.0)
    with pytest.raises(ValueError, match="ridge"):
        _core.OnlineFit(coeffs(ASCEND), ridge=0.0)
    with pytest.raises(ValueError, match="real_s"):
        fit.observe(_core.OnlineFit.features([]), 0.0)
    with pytest.raises(ValueError, match="a_d"):
        _core.OnlineFit(coeffs({**ASCEND, "a_d": -1.0}))
    with pytest.raises(TypeError, match="online_fit"):
        sim.simulate(sim.workloads.sharegpt_like(rate=5, n=5, seed=0), online_fit="yes")


class Recording(slocore.BatchScheduler):
    """sarathi_fcfs, logging each iteration's predicted / actual time."""

    def __init__(self):
        super().__init__()
        self.inner = slocore.make_batch_scheduler("sarathi_fcfs")
        self.ratios = []

    def name(self):
        return "recording"

    def schedule(self, engine, now):
        return self.inner.schedule(engine, now)

    def on_batch_done(self, engine, plan, predicted_s, actual_s, now):
        self.ratios.append(predicted_s / actual_s)
        self.inner.on_batch_done(engine, plan, predicted_s, actual_s, now)

    def on_finished(self, request, now):
        self.inner.on_finished(request, now)


def test_engine_refits_its_belief_from_the_iterations_it_runs():
    """The simulator's engine with online_fit, believing H100's coefficients on an Ascend
    910B: once it has run a while, its predictions of its own iterations are right, where the
    scalar correction stays off by tens of percent (it cannot change the shape)."""
    truth, _ = hardware_profile("ascend910b-qwen7b")
    err, final = {}, {}
    for fit in (False, True):
        rng = random.Random(2)
        rec = Recording()
        e = _core.EngineModel(truth, rec, belief=coeffs(H100), online_fit=fit)
        now, rid = 0.0, 0
        for _ in range(40):
            for _ in range(rng.randrange(1, 24)):
                e.add(
                    _core.RequestState(
                        _core.Request(rid, now, rng.randrange(32, 2048), output_len=rng.randrange(8, 400))
                    )
                )
                rid += 1
            for _ in range(rng.randrange(10, 120)):
                dt = e.start(now)
                if dt < 0:
                    break
                now += dt
                e.finish(now)
        late = rec.ratios[len(rec.ratios) // 2 :]
        err[fit] = math.sqrt(sum((r - 1) ** 2 for r in late) / len(late))
        m = e.view.model
        final[fit] = {k: getattr(m.coeffs, k) * m.correction for k in NAMES}
    assert err[True] < 0.02 and err[False] > 0.1, err
    assert final[False]["a_d"] / final[False]["t_c"] == pytest.approx(H100["a_d"] / H100["t_c"], rel=1e-9)


def test_step_fit_learns_an_engines_steps_from_their_times():
    """integrations.step_fit (what the vLLM plugin runs): steps timed by a clock, the truth an
    Ascend 910B's, the profile H100's; the model's predictions end up right, it is refitted
    every WINDOW steps, and steps never ended do not pile up."""
    from slocore.integrations import step_fit

    now = [0.0]
    model = _core.LatencyModel(coeffs(H100))
    sf = step_fit.StepFit(model, clock=lambda: now[0])
    rng = random.Random(3)
    for i in range(20 * step_fit.WINDOW):
        items = random_batch(rng)
        sf.begin(i, [_core.BatchItem(*it) for it in items])
        now[0] += truth_time(ASCEND, items)
        sf.end(i)
    assert sf.steps == 20 * step_fit.WINDOW and model.correction == 1.0
    first = sf.report()  # over every step so far: the early ones on the H100 profile
    assert first["steps"] == sf.steps and first["rms_rel_error"] > 0.1
    assert sf.report()["rms_rel_error"] is None  # a new window
    held_out = [random_batch(rng) for _ in range(200)]
    err = max(abs(model.batch_time([_core.BatchItem(*it) for it in b]) / truth_time(ASCEND, b) - 1) for b in held_out)
    assert err < 0.05
    for i in range(step_fit.WINDOW):  # the refitted model predicts the steps it times
        items = random_batch(rng)
        sf.begin(i, [_core.BatchItem(*it) for it in items])
        now[0] += truth_time(ASCEND, items)
        sf.end(i)
    r = sf.report()
    assert r["rms_rel_error"] < 0.05 < 0.3 < r["prior_rms_rel_error"]
    sf.end("never begun")  # ignored
    sf.begin("empty", [])  # a step that runs nothing is not timed
    for i in range(3 * step_fit.MAX_OPEN):
        sf.begin(("open", i), [_core.BatchItem(1, 10, False)])
    assert len(sf._open) == step_fit.MAX_OPEN
    with pytest.raises(ValueError, match="window"):
        step_fit.StepFit(model, window=0)
    # the plugin's setting (config or SLOCORE_ONLINE_FIT): a bool or its usual spellings
    assert [step_fit.online_fit_setting(v) for v in (True, "1", " ON ", "yes", False, "0", "off", "False")] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    for bad in ("maybe", "", 2, None):
        with pytest.raises(ValueError, match="online_fit"):
            step_fit.online_fit_setting(bad)


def test_emulated_engine_takes_online_fit_as_a_bool_only():
    pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
    from slocore.serve.engine import EmulatedEngine

    assert EmulatedEngine(online_fit=True).core.view.model is not None
    with pytest.raises(ValueError, match="online_fit"):
        EmulatedEngine(online_fit="false")  # a string would have been truthy
