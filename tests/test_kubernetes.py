"""Kubernetes: the manifests under deploy/kubernetes validate against the Kubernetes schemas
(the JSON schemas shipped in the ``kubernetes-validate`` PyPI package, strict: unknown
fields fail), the KEDA ScaledObject against the ScaledObject fields KEDA documents (its CRD
schema is in no PyPI package), the router's ConfigMap is a valid serve config, and the
gauges the HPA/KEDA queries read are the ones `slocore serve` exports: with launcher kind
``external`` the scaler's decisions move ``slocore_scaler_desired_instances`` and start
nothing."""

import asyncio
import glob
import os
import re
from typing import Literal, Optional

import pytest

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate (the test extra)")
pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")

from pydantic import BaseModel, ConfigDict, Field  # noqa: E402

import slocore  # noqa: E402
from slocore.serve import config as cfgmod  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, "..", "deploy", "kubernetes")
K8S_VERSION = "1.30.0"  # the oldest Kubernetes these manifests are written for


def docs():
    out = []
    for f in sorted(glob.glob(os.path.join(DEPLOY, "*.yaml"))):
        with open(f) as fh:
            out += [(os.path.basename(f), d) for d in yaml.safe_load_all(fh) if d]
    return out


# --- KEDA ScaledObject (keda.sh/v1alpha1): the fields of KEDA's ScaledObject spec we use ---
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Target(_Strict):
    apiVersion: str = "apps/v1"
    kind: Literal["Deployment", "StatefulSet"] = "Deployment"
    name: str = Field(min_length=1)


class _PromMeta(_Strict):
    serverAddress: str = Field(pattern=r"^https?://")
    query: str = Field(min_length=1)
    threshold: str = Field(pattern=r"^[0-9]+(\.[0-9]+)?$")
    activationThreshold: Optional[str] = None


class _Trigger(_Strict):
    type: Literal["prometheus"]
    metricType: Literal["AverageValue", "Value", "Utilization"] = "AverageValue"
    metadata: _PromMeta


class _ScaledObjectSpec(_Strict):
    scaleTargetRef: _Target
    minReplicaCount: int = Field(0, ge=0)
    maxReplicaCount: int = Field(100, ge=1)
    pollingInterval: int = Field(30, ge=1)
    cooldownPeriod: int = Field(300, ge=0)
    triggers: list[_Trigger] = Field(min_length=1)


class _Meta(BaseModel):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    labels: dict[str, str] = {}


class ScaledObject(_Strict):
    apiVersion: Literal["keda.sh/v1alpha1"]
    kind: Literal["ScaledObject"]
    metadata: _Meta
    spec: _ScaledObjectSpec


# --- tests -----------------------------------------------------------------------------------
def test_manifests_validate_against_kubernetes_schemas():
    kinds = set()
    for f, d in docs():
        kinds.add(d["kind"])
        if d["kind"] == "ScaledObject":
            so = ScaledObject(**d)
            assert so.spec.minReplicaCount <= so.spec.maxReplicaCount, f
            continue
        kv.validate(d, K8S_VERSION, strict=True)  # raises ValidationError naming the field
    assert {"StatefulSet", "Service", "Deployment", "ConfigMap", "HorizontalPodAutoscaler", "ScaledObject"} <= kinds


def test_the_validator_catches_mistakes():
    sts = next(d for _, d in docs() if d["kind"] == "StatefulSet")
    bad = {**sts, "spec": {**sts["spec"], "replicas": "two"}}
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, K8S_VERSION, strict=True)
    typo = {**sts, "spec": {**sts["spec"], "replica": 2}}
    with pytest.raises(kv.ValidationError):
        kv.validate(typo, K8S_VERSION, strict=True)
    so = next(d for _, d in docs() if d["kind"] == "ScaledObject")
    with pytest.raises(ValueError):
        ScaledObject(**{**so, "spec": {**so["spec"], "triggers": []}})


def test_router_configmap_is_a_valid_serve_config_and_targets_match():
    cm = next(d for f, d in docs() if d["kind"] == "ConfigMap" and f == "router.yaml")
    cfg = cfgmod.from_dict(yaml.safe_load(cm["data"]["serve.yaml"]))
    assert cfg.scaler is not None and cfg.scaler.launcher.kind == "external"
    sts = next(d for _, d in docs() if d["kind"] == "StatefulSet")
    # every engine the HPA/KEDA may start is a backend of the router
    for _, d in docs():
        if d["kind"] in ("HorizontalPodAutoscaler", "ScaledObject"):
            spec = d["spec"]
            assert spec["scaleTargetRef"]["name"] == sts["metadata"]["name"]
            top = spec.get("maxReplicas", spec.get("maxReplicaCount"))
            assert top == cfg.scaler.max_instances
            names = {b.name for b in cfg.backends}
            assert names == {f"{sts['metadata']['name']}-{k}" for k in range(top)}


class StepScaler(slocore.Scaler):
    """Scale out twice, then in three times: one decision per tick the test allows."""

    def __init__(self):
        super().__init__()
        self.plan = ["out", "out", "in", "in", "in"]
        self.allowed = 0

    def name(self):
        return "step"

    def interval(self):
        return 0.05

    def decide(self, now, views):
        if not self.plan or not views or self.allowed <= 0:
            return []
        self.allowed -= 1
        step = self.plan.pop(0)
        if step == "out":
            return [slocore.ScaleDecision(slocore.ScaleAction.SCALE_OUT, slocore.Role.COLOCATED)]
        return [slocore.ScaleDecision(slocore.ScaleAction.SCALE_IN, slocore.Role.COLOCATED, views[0].id)]


def gauge(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{name}\{{{labels}\}} ([0-9.e+-]+)$", text, re.M)
    assert m, f"{name}{{{labels}}} not on /metrics"
    return float(m.group(1))


def test_external_launcher_exports_the_desired_count_the_manifests_read():
    """`slocore serve` with launcher kind external: decisions move the desired gauge within
    [min, max], nothing is started or drained, and every series the HPA/KEDA queries
    exists on /metrics with the labels they select."""
    from aiohttp import web

    from slocore.serve.router import Router

    d = {
        "backends": [{"name": "e0", "emulated": {"time_scale": 0.05}}],
        "scaler": {
            "name": f"{__name__}:StepScaler",
            "min_instances": 1,
            "max_instances": 2,
            "launcher": {"kind": "external"},
        },
        "slo": {"default": {"ttft_ms": 2000, "tpot_ms": 100}},
        "limits": {"slo_classes": ["interactive"]},
    }

    async def go():
        router = Router(cfgmod.from_dict(d))
        runner = web.AppRunner(router.app(), access_log=None)
        await runner.setup()
        import aiohttp

        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        seen = []
        try:
            async with aiohttp.ClientSession() as s:
                body = {"prompt": [1, 2, 3], "max_tokens": 2}
                async with s.post(url + "/v1/completions", json=body, headers={"x-slo-class": "interactive"}) as r:
                    assert r.status == 200
                sc = router.scaler.scaler
                while sc.plan:  # one decision at a time; the gauge after each
                    left = len(sc.plan)
                    sc.allowed += 1
                    while len(sc.plan) == left:
                        await asyncio.sleep(0.01)
                    await asyncio.sleep(0.01)  # the tick that decided has applied it (same loop)
                    async with s.get(url + "/metrics") as r:
                        text = await r.text()
                    seen.append(gauge(text, "slocore_scaler_desired_instances", 'pool="colocated"'))
                async with s.get(url + "/metrics") as r:
                    text = await r.text()
        finally:
            await runner.cleanup()
        return router, seen, text

    router, seen, text = asyncio.run(asyncio.wait_for(go(), 30))
    assert seen == [2, 2, 1, 1, 1]  # out, out (cap 2), in, in (floor 1), in (floor 1)
    assert len(router.pool) == 1 and router.scaler.launcher is None  # nothing started or drained
    assert 'slocore_scaler_ignored_decisions_total{action="scale_out",pool="colocated",reason="cap"}' in text
    assert 'slocore_scaler_ignored_decisions_total{action="scale_in",pool="colocated",reason="floor"}' in text
    # the series the KEDA/HPA queries read
    for _, doc in docs():
        if doc["kind"] == "ScaledObject":
            for t in doc["spec"]["triggers"]:
                for series in re.findall(r"(slocore_[a-z_]+)\{", t["metadata"]["query"]):
                    assert re.search(rf"^{series}\{{", text, re.M), series
    assert re.search(r'^slocore_requests_total\{outcome="slo_(met|missed)",slo_class="interactive"\} 1', text, re.M)
