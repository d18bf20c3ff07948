"""The router's /metrics attainment is the load generator's: the same requests through
``slocore bench serve``'s client (``serve.loadgen``) and the router, judged by the one
definition (``slocore.request_metrics``); engine-rejected requests counted apart on both
sides; the windowed gauge sees only recent requests; policy names and per-backend counters."""

import asyncio

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import slocore  # noqa: E402
from slocore.serve import loadgen  # noqa: E402
from test_serve_router import EMU, serving  # noqa: E402

CLASSES = ["loose", "ttft_tight", "tpot_tight"]


def config(window_s: float = 60.0) -> dict:
    emu = dict(EMU, max_model_len=512)
    return {
        "backends": [{"name": "e0", "emulated": emu}, {"name": "e1", "emulated": dict(emu)}],
        "policy": {"name": "round_robin"},
        "poll_interval_s": 0.2,
        "limits": {"slo_classes": CLASSES},
        "metrics_window_s": window_s,
    }


def workload(n: int = 24, t0: float = 0.0) -> tuple[list, dict]:
    """Requests whose SLO outcome does not hang on timing, and the attainment each class must
    show: loose always meets; ttft_tight (1 us) never; tpot_tight (1 us per token) meets only
    with one output token (TPOT is vacuous below two tokens, metrics.h); every 6th request
    asks for more than the engines' 512-token context (the engine's 400)."""
    reqs, met, seen = [], dict.fromkeys(CLASSES, 0), dict.fromkeys(CLASSES, 0)
    for i in range(n):
        cls = CLASSES[i % 3]
        out = 1 if i % 4 == 0 else 6
        ttft, tpot = {"loose": (60.0, 10.0), "ttft_tight": (1e-6, 10.0), "tpot_tight": (60.0, 1e-6)}[cls]
        invalid = i % 6 == 5
        plen = 510 if invalid else 32  # 510 + 6 > 512
        reqs.append(slocore.Request(i, t0 + 0.01 * i, plen, output_len=out, ttft=ttft, tpot=tpot, task=cls))
        if not invalid:
            seen[cls] += 1
            met[cls] += cls == "loose" or (cls == "tpot_tight" and out == 1)
    return reqs, {c: met[c] / seen[c] for c in CLASSES}


def samples(text: str) -> dict:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def by(s: dict, name: str, **labels) -> dict:
    """{the remaining labels: value} of metric `name` whose labels include `labels`."""
    want = set(labels.items())
    return {
        tuple(kv for kv in lab if kv[0] not in labels): v for (n, lab), v in s.items() if n == name and want <= set(lab)
    }


def test_router_attainment_equals_loadgen():
    reqs, expected = workload()

    async def go():
        async with serving(config()) as (router, url, s):
            out = await loadgen.run(url, reqs, progress=False)
            async with s.get(url + "/metrics") as r:
                return out, samples(await r.text())

    out, m = asyncio.run(asyncio.wait_for(go(), 60))
    summ = out["summary"]
    n_invalid = sum(1 for r in reqs if r.prompt_len == 510)
    assert len(out["invalid"]) == n_invalid and not out["errors"], (out["invalid"], out["errors"])
    assert summ["requests"] == len(reqs) - n_invalid
    # the load generator's own computation is the expected one ...
    for cls in CLASSES:
        assert summ["attainment_by_task"][cls] == pytest.approx(expected[cls]), cls
    assert 0 < expected["tpot_tight"] < 1  # the vacuous-TPOT rule is exercised
    # ... and the router's gauges, cumulative and windowed, read the same
    for cls in CLASSES:
        assert m[("slocore_slo_attainment", (("slo_class", cls),))] == pytest.approx(summ["attainment_by_task"][cls])
        assert m[("slocore_slo_attainment_window", (("slo_class", cls),))] == pytest.approx(
            summ["attainment_by_task"][cls]
        )
    # engine 4xx: counted apart, as the load generator counts its invalid answers
    outcomes = by(m, "slocore_requests_total")
    rejected = sum(v for lab, v in outcomes.items() if ("outcome", "engine_rejected") in lab)
    assert rejected == n_invalid
    met = sum(v for lab, v in outcomes.items() if ("outcome", "slo_met") in lab)
    counted = sum(v for lab, v in outcomes.items() if ("outcome", "engine_rejected") not in lab)
    assert counted == summ["requests"] and met / counted == pytest.approx(summ["attainment"])
    # per backend: round robin spread the answers, engine_rejected included
    per_backend = by(m, "slocore_backend_requests_total")
    for b in ("e0", "e1"):
        assert sum(v for lab, v in per_backend.items() if ("backend", b) in lab) > 0
    assert sum(per_backend.values()) == len(reqs)
    assert sum(v for lab, v in per_backend.items() if ("outcome", "engine_rejected") in lab) == n_invalid
    assert sum(by(m, "slocore_backend_ttft_seconds_count").values()) == summ["requests"]
    # policy names in labels, TPOT buckets from 1 ms
    assert m[("slocore_policy_info", (("policy", "round_robin"), ("role", "colocated")))] == 1.0
    assert by(m, "slocore_decisions_total", policy="round_robin", role="colocated")
    les = sorted(float(dict(lab)["le"]) for (n, lab) in m if n == "slocore_tpot_seconds_bucket")
    assert les[0] == 0.001


def test_windowed_attainment_forgets_old_requests():
    """Loose requests, then (after the window) only ttft_tight ones of the same class labels:
    the cumulative gauge mixes both rounds, the windowed one reads the second round only."""
    first = [slocore.Request(i, 0.01 * i, 16, output_len=2, ttft=60.0, tpot=10.0, task="loose") for i in range(6)]
    second = [slocore.Request(i, 0.01 * i, 16, output_len=2, ttft=1e-6, tpot=10.0, task="loose") for i in range(6)]

    async def go():
        async with serving(config(window_s=1.0)) as (router, url, s):
            a = await loadgen.run(url, first, progress=False)
            await asyncio.sleep(1.2)
            b = await loadgen.run(url, second, progress=False)
            async with s.get(url + "/metrics") as r:
                return a, b, samples(await r.text())

    a, b, m = asyncio.run(asyncio.wait_for(go(), 60))
    assert a["summary"]["attainment"] == 1.0 and b["summary"]["attainment"] == 0.0
    lab = (("slo_class", "loose"),)
    assert m[("slocore_slo_attainment", lab)] == pytest.approx(0.5)
    assert m[("slocore_slo_attainment_window", lab)] == pytest.approx(b["summary"]["attainment"])
    assert m[("slocore_slo_window_requests", lab)] == len(second)
