"""The data path's JSON (serve.fastjson): orjson where it is installed, the same values as
the standard library's json, and the standard library where orjson refuses."""

import json

import pytest

from slocore.serve import fastjson


@pytest.mark.parametrize(
    "text",
    [
        b'{"id":"cmpl-1","choices":[{"index":0,"text":" a\\u00e9\\ud83d\\ude00","token_ids":[1,2]}],"usage":null}',
        b'{"a": 1.5e-7, "b": [true, false, null], "c": {"d": "x"}}',
        b'"\\ud800"',  # a lone surrogate: orjson refuses, json reads it
        b'{"a": NaN}',  # not JSON, but what json.loads accepts
    ],
)
def test_loads_agrees_with_json(text):
    got, want = fastjson.loads(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want)


def test_loads_errors_are_value_errors():
    with pytest.raises(ValueError):
        fastjson.loads(b"[1,2")


@pytest.mark.parametrize("obj", [{"prompt": [1, 2], "seed": 2**70, "t": 0.1, "s": "é"}, {"n": None, "x": [1.5, -2]}])
def test_dumps_writes_the_same_values(obj):
    assert json.loads(fastjson.dumps(obj)) == obj
