"""A backend's latency profile: a `slocore profile` JSON per backend becomes that backend's
latency model; a real engine without a profile gets one warning line naming it."""

import asyncio
import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("pydantic", reason="the serve extra (pydantic) is not installed")

from slocore.profiles import load_profile  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402
from slocore.serve.pool import BackendPool  # noqa: E402

MEASURED = Path(__file__).parents[1] / "docs" / "fidelity" / "vllm-cpu-tiny.json"  # `slocore profile` output


def pool_of(d: dict) -> tuple:
    cfg = cfgmod.from_dict(d)
    pool = BackendPool(False, 2.0)
    return cfg, [pool.add(bc) for bc in cfg.backends]


def test_measured_profile_per_backend_and_one_warning_per_default(caplog):
    assert json.loads(MEASURED.read_text())["measured"]["command"].startswith("slocore profile")
    d = {
        "backends": [
            {"name": "v0", "url": "http://127.0.0.1:9", "profile": str(MEASURED)},
            {"name": "v1", "url": "http://127.0.0.1:10"},
            {"name": "v2", "url": "http://127.0.0.1:11"},
            {"name": "v3", "url": "http://127.0.0.1:12", "profile": "h100-llama2-7b"},
            {"name": "e0", "emulated": {}},  # runs its own profile: the belief is exact
        ]
    }
    with caplog.at_level(logging.WARNING, logger="slocore.serve"):
        cfg, backends = pool_of(d)
    warned = [r.getMessage() for r in caplog.records if "no latency profile given" in r.getMessage()]
    assert len(warned) == 2 and "backend v1:" in warned[0] and "backend v2:" in warned[1]
    assert "slocore profile --url http://127.0.0.1:10 -o v1.json" in warned[0]
    measured = load_profile(str(MEASURED))
    c = backends[0].model.coeffs
    for k, v in measured["per_request"].items():
        assert getattr(c, k) == pytest.approx(v), k
    assert backends[0].kv_blocks == measured["kv"]["num_blocks"]
    bundled = load_profile("h100-llama2-7b")["per_request"]
    assert backends[1].model.coeffs.t_c == pytest.approx(bundled["t_c"]) != pytest.approx(c.t_c)


def test_unknown_or_broken_profile_is_a_config_error(tmp_path):
    with pytest.raises(ValueError, match=r"backends\[0\]\.profile: .*unknown profile"):
        cfgmod.from_dict({"backends": [{"name": "v0", "url": "http://h:1", "profile": "no-such"}]})
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match=r"backends\[0\]\.profile: "):
        cfgmod.from_dict({"backends": [{"name": "v0", "url": "http://h:1", "profile": str(bad)}]})


def test_views_carry_the_engines_token_budget():
    # A measured profile records the engine's max_num_batched_tokens: the policies' views
    # plan iterations of that many tokens (the prediction's iteration count, the held
    # queue's one-iteration backlog), not InstanceView's 8192 default.
    budget = load_profile(str(MEASURED))["engine"]["max_num_batched_tokens"]
    d = {
        "backends": [
            {"name": "v0", "url": "http://127.0.0.1:9", "profile": str(MEASURED)},
            {"name": "v1", "url": "http://127.0.0.1:10", "profile": "h100-llama2-7b"},
        ]
    }
    _, (v0, v1) = pool_of(d)
    assert budget != 8192 and v0.view().max_batch_tokens == budget
    assert v1.view().max_batch_tokens == 8192  # a bundled profile names no engine: the default


def test_an_emulated_backends_view_carries_its_engines_token_budget():
    from test_conformance import serving

    async def go():
        d = {"backends": [{"name": "e0", "emulated": {"max_batch_tokens": 512, "time_scale": 0.05}}]}
        async with serving(d) as (router, _, _s):
            return router.pool.backends["e0"].view().max_batch_tokens

    assert asyncio.run(go()) == 512
