"""Workloads and traces: deterministic, HFX Table 1 statistics, arrival processes,
validation naming the column and row, trace formats with malformed rows."""

import inspect

import numpy as np
import pytest

from slocore.sim import load_trace
from slocore.sim import workloads as W


def test_deterministic_and_seeded():
    a, b, c = W.hfx_4task(8, seed=1), W.hfx_4task(8, seed=1), W.hfx_4task(8, seed=2)
    assert np.array_equal(a.prompt_len, b.prompt_len) and np.array_equal(a.arrival, b.arrival)
    assert not np.array_equal(a.prompt_len, c.prompt_len)


def test_hfx_table1_statistics():
    w = W.hfx_4task(rate=10, n_per_task=4000, seed=0)
    d = w.describe()["tasks"]
    for t in W.HFX_4TASK:
        _, _, im, _, om, _ = W.HFX_TASKS[t]
        assert d[t]["prompt_mean"] == pytest.approx(im, rel=0.05)
        assert d[t]["output_mean"] == pytest.approx(om, rel=0.05)
    assert set(np.unique(w.ttft)) == {0.7, 1.0, 2.0, 20.0}
    assert len(w) / w.duration == pytest.approx(10, rel=0.1)


def test_heavy_tail_sharegpt():
    w = W.sharegpt_like(rate=5, n=20000, seed=0)
    assert w.prompt_len.mean() == pytest.approx(259, rel=0.1)
    assert np.percentile(w.prompt_len, 99) > 4 * np.median(w.prompt_len)


def test_gamma_burstiness():
    rng = np.random.default_rng(0)
    gaps = np.diff(W.arrivals(50000, 10.0, rng, "gamma", cv=3.0))
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)
    assert 1 / gaps.mean() == pytest.approx(10, rel=0.05)


def test_validation_names_column_and_row():
    w = W.uniform_random(n=5)
    bad = w.prompt_len.copy()
    bad[3] = 0
    with pytest.raises(ValueError, match="prompt_len: row 3"):
        w._with(prompt_len=bad)
    with pytest.raises(ValueError, match="unknown 'x'"):
        W.make_workload("x")
    with pytest.raises(ValueError, match="rate"):
        W.hfx_4task(rate=0)


def test_rate_scale_merge_priorities():
    w = W.uniform_random(rate=2, n=100, seed=3)
    assert w.rate_scaled(2).duration == pytest.approx(w.duration / 2)
    m = w.merge(W.hfx_2task(rate=2, n_per_task=10))
    assert len(m) == 120 and np.all(np.diff(m.arrival) >= 0) and "gsm8k" in m.task_names
    p = W.with_priorities(w, seed=1)
    assert set(np.unique(p.priority_weight)) == {1.0, 2.0}


def test_traces(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("arrival,prompt_len,output_len,ttft,tpot,task\n2.0,10,5,0.5,0.05,a\n0.5,20,3,,,b\n")
    w = load_trace(plain, rate_scale=2)
    assert list(w.arrival) == [0.0, 0.75] and list(w.prompt_len) == [20, 10] and w.ttft[0] == 1.0
    azure = tmp_path / "az.csv"
    azure.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,20\n"
        "2023-11-16 18:15:47.1805900,50,10\n"
    )
    assert load_trace(azure).arrival[1] == pytest.approx(0.5)
    burst = tmp_path / "b.csv"
    burst.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,10,0,10,x\n6,GPT-4,10,7,17,x\n"
    )
    with pytest.raises(ValueError, match="line 2: column 'Response tokens'"):
        load_trace(burst)
    w = load_trace(burst, on_error="skip")
    assert len(w) == 1 and w.params["skipped"] == 1 and w.task_names[w.task[0]] == "GPT-4"
    junk = tmp_path / "j.csv"
    junk.write_text("arrival,prompt_len,output_len\n1,abc,2\n")
    with pytest.raises(ValueError, match="line 2: column 'prompt_len'"):
        load_trace(junk)
    with pytest.raises(ValueError, match="detect"):
        (tmp_path / "u.csv").write_text("a,b\n1,2\n")
        load_trace(tmp_path / "u.csv")


@pytest.mark.parametrize("name", sorted(W.WORKLOADS))
def test_every_workload_checks_seed_rate_and_size(name):
    """A negative seed, a NaN rate or a rate implying more than MAX_REQUESTS requests is a
    ValueError naming it, raised before anything is drawn or allocated (they were numpy's
    "expected non-negative integer", "cannot convert float NaN to integer" and a MemoryError)."""
    f = W.WORKLOADS[name]
    with pytest.raises(ValueError, match="seed: must be an integer >= 0"):
        f(seed=-1)
    if "rate" in inspect.signature(f).parameters:
        with pytest.raises(ValueError, match="rate: must be finite and > 0"):
            f(rate=float("nan"))
    if name in ("steady", "hfx_ramp"):  # duration-based: the count follows the rate
        with pytest.raises(ValueError, match="MAX_REQUESTS"):
            f(rate=1e12)
