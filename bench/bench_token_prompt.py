"""The router's one read of a token-id prompt per request: 2,000 ids (the long-prompt
bench_router request), checked, bounded and cut into prefix segments of 16, C++
(``_core.token_id_prompt``) vs the pure-Python reference
(python/slocore/reference/token_prompt.py) in the same run."""

import pytest

from slocore import _core
from slocore.reference import token_prompt as ref

IDS = list(range(1, 2001))
GROUP = "token-id prompt 2k ids (check+bounds+segments)"


@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_token_id_prompt(benchmark, record_ratio, impl):
    f = _core.token_id_prompt if impl == "cpp" else ref.token_id_prompt
    got = benchmark(f, IDS, 16, 8192)
    record_ratio(GROUP, impl)
    assert got == ref.token_id_prompt(IDS, 16, 8192)
