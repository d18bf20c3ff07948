"""A token-id prompt is read once per request (``openai.token_ids`` over
``_core.token_id_prompt``): the C++ equals its pure-Python reference, and the field checks,
prompt length and prefix identity given its result answer exactly what they answer reading
the body themselves (the way before, kept for bodies without ids)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slocore import _core
from slocore.reference.token_prompt import token_id_prompt as ref_token_id_prompt
from slocore.serve import limits, openai
from slocore.serve.config import ServeConfig
from slocore.serve.prefix_index import PrefixConfig, PromptIdentity

ITEMS = st.one_of(
    st.integers(-(2**64), 2**64),
    st.integers(-3, 50),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=2),
    st.none(),
)
ID_LISTS = st.lists(st.integers(-3, 200), max_size=40) | st.lists(ITEMS, max_size=6)


@given(ID_LISTS, st.integers(1, 8), st.integers(0, 6))
def test_cpp_equals_reference(ids, block_size, max_blocks):
    assert _core.token_id_prompt(ids, block_size, max_blocks) == ref_token_id_prompt(ids, block_size, max_blocks)


@pytest.mark.parametrize("p", [(1, 2), "12", None, {"a": 1}, [], [2**63], [-(2**63) - 1], [True], [1, 2.0]])
def test_what_is_not_a_list_of_64_bit_ints_is_none(p):
    assert _core.token_id_prompt(p, 16, 8) is None
    assert ref_token_id_prompt(p, 16, 8) is None


def test_the_64_bit_bounds_are_ids():
    got = _core.token_id_prompt([2**63 - 1, -(2**63)], 1, 4)
    assert got == ref_token_id_prompt([2**63 - 1, -(2**63)], 1, 4)
    assert got[:2] == (-(2**63), 2**63 - 1)


def test_bad_block_arguments_are_value_errors():
    with pytest.raises(ValueError, match="max_blocks"):
        _core.token_id_prompt([1, 2], 16, -1)
    with pytest.raises(ValueError, match="ids_per_block"):
        _core.token_id_prompt([1, 2], 0, 4)


PROMPTS = st.one_of(
    ID_LISTS,
    ID_LISTS.map(lambda p: [p]),
    ID_LISTS.map(lambda p: [[p]]),
    st.text(max_size=30),
    st.lists(st.text(max_size=5), max_size=2),
    st.lists(st.text(max_size=5), max_size=1).map(lambda p: [p]),
)


def _outcome(f, *a):
    try:
        return ("ok", f(*a))
    except openai.BadRequest as e:
        return ("400", str(e))


def _old_range_check(body: dict, vocab) -> None:
    """limits.check_fields' vocabulary check as it read the body before ``token_ids``."""
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], list):
        p = p[0]
    if isinstance(p, list) and p and openai.all_token_ids(p):
        for x in p:
            if x < 0 or (vocab is not None and x >= vocab):
                bound = f"[0, {vocab})" if vocab is not None else ">= 0"
                raise openai.BadRequest(f"prompt: token id {x} out of range {bound}")


@given(PROMPTS, st.sampled_from([None, 100]), st.integers(1, 4), st.integers(1, 4))
def test_one_read_answers_as_three(prompt, vocab, block_size, max_blocks):
    body = {"prompt": prompt}
    ident = PromptIdentity(PrefixConfig(block_size=block_size, max_prompt_blocks=max_blocks))
    tids = openai.token_ids(body, block_size, ident.max_blocks())
    lim = ServeConfig().limits.model_copy(update={"vocab_size": vocab})
    assert _outcome(limits.check_fields, body, False, lim, tids) == _outcome(_old_range_check, body, vocab)
    assert _outcome(openai.prompt_tokens, body, False, tids) == _outcome(openai._prompt_tokens, body, False)
    assert ident.segments(body, False, 1, tids) == PromptIdentity(ident.cfg).segments(body, False, 1)
    if tids is not None and tids.segments is not None:
        assert ident.exact_ids[1] is tids.ids


def test_segments_made_for_another_block_size_are_not_used():
    body = {"prompt": list(range(40))}
    tids = openai.token_ids(body, 4, 8)
    ident = PromptIdentity(PrefixConfig(block_size=16))
    assert ident.segments(body, False, None, tids) == _core.id_block_segments(list(range(40)), 16, 16, 8192)


def test_identity_off_asks_for_no_segments():
    ident = PromptIdentity(PrefixConfig(enabled=False))
    tids = openai.token_ids({"prompt": [1, 2, 3]}, 16, ident.max_blocks())
    assert tids.segments == [] and ident.segments({"prompt": [1, 2, 3]}, False, 1, tids) == []


FIELDS = ("id", "arrival", "prompt_len", "output_len", "expected_output_len", "max_output_len", "priority")
MORE = ("priority_weight", "utility", "task", "prefix")


@pytest.mark.parametrize("deadline", [None, 2.5])
def test_an_attempt_is_a_copy_of_its_template(deadline):
    kw = {"deadline": deadline} if deadline is not None else {}
    t = _core.Request(7, 1.5, 40, max_output_len=8, ttft=0.5, tpot=0.05, priority=2, task="c", prefix=[(3, 16)], **kw)
    a = _core.copy_request(t)
    for f in FIELDS + MORE:
        assert getattr(a, f) == getattr(t, f), f
    assert (a.slo.ttft, a.slo.tpot, a.slo.deadline) == (t.slo.ttft, t.slo.tpot, t.slo.deadline)
    a.prefix = []
    assert t.prefix == [(3, 16)]  # a copy, not the same request


def test_a_chat_body_with_token_ids_is_still_range_checked():
    lim = ServeConfig().limits.model_copy(update={"vocab_size": 100})
    body = {"messages": [{"role": "user", "content": "hi"}], "prompt": [5, 100]}
    with pytest.raises(openai.BadRequest, match="token id 100 out of range"):
        limits.check_fields(body, True, lim, openai.token_ids(body))
    assert openai.prompt_tokens(body, True, openai.token_ids(body)) == openai._prompt_tokens(body, True)
