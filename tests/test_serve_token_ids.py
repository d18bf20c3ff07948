"""The router's one check that a prompt is a list of token ids (``openai.all_token_ids``)
agrees with the per-item definition it replaced, and the range check names the first id out
of range."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slocore.serve import limits
from slocore.serve.config import ServeConfig
from slocore.serve.openai import BadRequest, all_token_ids, prompt_tokens
from slocore.serve.prefix_index import prompt_text

ITEMS = st.one_of(st.integers(-5, 10**20), st.booleans(), st.floats(allow_nan=False), st.text(max_size=2), st.none())


def per_item(p: list) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in p)


@given(st.lists(ITEMS, max_size=8) | st.lists(st.integers(0, 50_000), max_size=64))
def test_all_token_ids_is_the_per_item_check(p):
    assert all_token_ids(p) == per_item(p)


@given(st.lists(st.integers(0, 99), min_size=1, max_size=32))
def test_token_id_prompts_are_read_as_ids(p):
    assert prompt_tokens({"prompt": p}, False) == len(p)
    assert prompt_text({"prompt": p}, False) == p


def test_bool_and_float_items_are_not_token_ids():
    assert not all_token_ids([1, True])
    assert not all_token_ids([1, 2.0])
    assert prompt_text({"prompt": [1, True]}, False) is None


def test_range_check_names_the_first_offender():
    lim = ServeConfig().limits.model_copy(update={"vocab_size": 100})
    limits.check_fields({"prompt": [5, 7, 99]}, False, lim)
    with pytest.raises(BadRequest, match="token id 100 out of range"):
        limits.check_fields({"prompt": [5, 100, -1, 200]}, False, lim)
    with pytest.raises(BadRequest, match="token id -1 out of range"):
        limits.check_fields({"prompt": [[5, -1, 100]]}, False, lim)
