"""Bad input at the boundary raises ValueError/KeyError naming the field; nothing crashes."""

import math

import pytest

import slocore as s


def make(**kw):
    base = dict(id=1, arrival=0.0, prompt_len=10)
    base.update(kw)
    rid, arrival, prompt = base.pop("id"), base.pop("arrival"), base.pop("prompt_len")
    return s.Request(rid, arrival, prompt, **base)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(prompt_len=0), "prompt_len"),
        (dict(prompt_len=-5), "prompt_len"),
        (dict(prompt_len=2**41), "prompt_len"),
        (dict(arrival=math.nan), "arrival"),
        (dict(arrival=-1.0), "arrival"),
        (dict(arrival=math.inf), "arrival"),
        (dict(id=-1), "id"),
        (dict(ttft=0.0), "slo.ttft"),
        (dict(ttft=math.nan), "slo.ttft"),
        (dict(tpot=-0.1), "slo.tpot"),
        (dict(deadline=0.0), "slo.deadline"),
        (dict(deadline=math.inf), "slo.deadline"),
        (dict(output_len=0), "output_len"),
        (dict(max_output_len=-1), "max_output_len"),
        (dict(expected_output_len=0), "expected_output_len"),
        (dict(priority=-1), "priority"),
        (dict(priority_weight=0.0), "priority_weight"),
        (dict(utility=math.nan), "utility"),
    ],
)
def test_bad_request_fields_raise_value_error_naming_field(kw, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        make(**kw)


def test_mutated_request_is_rejected_where_it_enters():
    r = make(ttft=1.0, tpot=0.1)
    r.prompt_len = -3
    with pytest.raises(ValueError, match="prompt_len"):
        s.Recorder().add(r)
    p = s._core.make_global_policy("round_robin")
    with pytest.raises(ValueError, match="prompt_len"):
        p.submit(r, 0.0)


def test_recorder_duplicates_unknown_ids_and_time_order():
    rec = s.Recorder()
    rec.add(make(id=7))
    with pytest.raises(ValueError, match="duplicate"):
        rec.add(make(id=7))
    with pytest.raises(KeyError, match="99"):
        rec.token(99, 1.0)
    with pytest.raises(KeyError):
        rec.get(12)
    rec.token(7, 1.0)
    with pytest.raises(ValueError, match="must not decrease"):
        rec.token(7, 0.5)
    with pytest.raises(ValueError, match="finite"):
        rec.token(7, math.nan)
    with pytest.raises(ValueError, match="finish time before last token"):
        rec.finish(7, 0.9)
    rec.finish(7, 1.0)
    with pytest.raises(ValueError, match="already ended"):
        rec.token(7, 2.0)
    assert len(rec) == 1 and 7 in rec and rec.get(7).outcome == s.Outcome.FINISHED


def test_request_defaults_and_optional_fields():
    r = make(output_len=5, deadline=2.0, task="qa")
    assert r.realtime and r.slo.deadline == 2.0 and r.output_len == 5 and r.task == "qa"
    assert math.isinf(make().slo.ttft) and not make().realtime
