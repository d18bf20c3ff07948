"""Fidelity: the official openai client sees the same objects through the router as directly
from the (emulated) engine, field by field, ids and timestamps excepted."""

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("openai", reason="the test extra (openai) is not installed")

from openai_compat import RouterThread, cases, compare  # noqa: E402


def test_openai_client_sees_the_same_through_the_router():
    rt = RouterThread(
        {
            "backends": [{"name": "e0", "emulated": {"profile": "h100-llama2-7b", "time_scale": 0.05}}],
            "policy": {"name": "round_robin"},
            "poll_interval_s": 0.2,
        }
    )
    try:
        direct = rt.router.backends["e0"].url
        diffs = compare(direct, rt.url, "slocore-emulated")
    finally:
        rt.close()
    assert not diffs, "\n".join(f"{n}:\n  direct: {a}\n  router: {b}" for n, a, b in diffs)
    assert len(cases("m")) >= 10
