"""The data path's JSON (serve.fastjson): orjson where it is installed, the same values as
the standard library's json, and the standard library where orjson refuses."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_loads_exact_is_the_standard_librarys(v):
    text = json.dumps(v).encode()
    got, want = fastjson.loads_exact(text), json.loads(text)
    assert got == want and json.dumps(got) == json.dumps(want)  # big integers stay exact integers


@pytest.mark.parametrize(
    "text",
    [b"[1, NaN]", b'"\\ud800"', b'{"a": 1, "a": 2}', b"1e400", b"-0", "[1]".encode("utf-16"), b"12345678901234567890"],
)
def test_loads_exact_edge_cases_match_json(text):
    assert json.dumps(fastjson.loads_exact(text)) == json.dumps(json.loads(text))


def test_loads_exact_errors_match_json():
    for bad in (b"[1,2", b"", b"\xff"):
        with pytest.raises(ValueError) as a:
            fastjson.loads_exact(bad)
        with pytest.raises(ValueError) as b:
            json.loads(bad)
        assert type(a.value) is type(b.value)
