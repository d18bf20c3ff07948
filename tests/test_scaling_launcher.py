"""LocalLauncher against a fake router registry and real subprocess engines (a tiny HTTP
engine): link only when healthy (and, from the warm pool, only once weights are in),
drain waits for in-flight requests, role switches, scaler decisions."""

import json
import logging
import os
import sys
import threading
import time
import urllib.request

import pytest

from slocore.scaling.launcher import (
    EngineSpec,
    InstanceRegistry,
    InstanceState,
    LocalLauncher,
    _decision_fields,
    http_get,
)

HERE = os.path.dirname(__file__)


class FakeRegistry:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def on_instance_ready(self, url, role):
        with self.lock:
            self.events.append(("ready", url, role))

    def on_instance_draining(self, url):
        with self.lock:
            self.events.append(("draining", url))

    def on_instance_stopped(self, url):
        with self.lock:
            self.events.append(("stopped", url))


def post(url, obj, timeout=10):
    req = urllib.request.Request(url, data=json.dumps(obj).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {}


def spec(**kw):
    def command(port, role, warm):
        return [
            sys.executable,
            os.path.join(HERE, "scaling_fake_engine.py"),
            "--port",
            str(port),
            "--role",
            role,
            "--startup",
            "0.3",
        ] + (["--warm"] if warm else [])

    def load_weights(inst):
        code, body = post(inst.url + "/load_weights", {"source": "peer"})
        assert code == 200
        return body["source"]

    def switch_role(inst, role):
        return post(inst.url + "/role", {"role": role})[0] == 200

    base = dict(
        command=command,
        startup_timeout_s=20,
        drain_timeout_s=20,
        stop_grace_s=5,
        poll_s=0.05,
        load_weights=load_weights,
        switch_role=switch_role,
    )
    base.update(kw)
    return EngineSpec(**base)


def test_command_template():
    from slocore.scaling.launcher import CommandTemplate

    c = CommandTemplate(
        ["eng", "--host", "{host}", "--port", "{port}", "--kv-role", "{role}"],
        warm_args=["--load-format", "dummy"],
        role_args={"prefill": ["--p"]},
    )
    assert c(8000, "prefill", True) == [
        "eng",
        "--host",
        "{host}",
        "--port",
        "8000",
        "--kv-role",
        "prefill",
        "--p",
        "--load-format",
        "dummy",
    ]
    assert c(1, "decode", False)[-1] == "decode"


def test_registry_protocol():
    assert isinstance(FakeRegistry(), InstanceRegistry)


def test_cold_start_links_after_health_and_stop_unlinks():
    reg = FakeRegistry()
    with LocalLauncher(spec(), reg) as L:
        inst = L.start("colocated")
        assert inst.state == InstanceState.READY and inst.weights_source == "disk"
        assert reg.events == [("ready", inst.url, "colocated")]
        assert post(inst.url + "/v1/completions", {})[0] == 200  # healthy when linked
        L.drain(inst.id)
        assert reg.events[1:] == [("draining", inst.url), ("stopped", inst.url)]
        assert inst.proc.poll() is not None


def test_drain_waits_for_inflight_requests():
    reg = FakeRegistry()
    with LocalLauncher(spec(), reg) as L:
        inst = L.start()
        res = {}
        t = threading.Thread(target=lambda: res.update(r=post(inst.url + "/v1/completions", {"latency": 1.0})))
        t.start()
        while L.inflight(inst) != 1:
            time.sleep(0.02)
        t0 = time.monotonic()
        L.drain(inst.id)
        t.join()
        assert res["r"][0] == 200, "the in-flight request finished before the stop"
        assert time.monotonic() - t0 >= 0.5
        assert [e[0] for e in reg.events] == ["ready", "draining", "stopped"]


def test_warm_pool_loads_weights_before_linking_and_refills():
    reg = FakeRegistry()
    with LocalLauncher(spec(), reg, warm_pool_size=1) as L:
        (w,) = L.fill_warm_pool()
        assert w.state == InstanceState.WARM and reg.events == []
        assert post(w.url + "/v1/completions", {})[0] == 503  # no weights yet
        inst = L.start("decode")
        assert inst is w and inst.weights_source == "peer"
        assert reg.events == [("ready", w.url, "decode")]
        info = json.loads(http_get(w.url + "/info")[1])
        assert info["weights"] and info["role"] == "decode"
        L.join(20)  # the pool refills in the background
        (w2,) = L.warm_instances()
        assert w2 is not w and w2.state == InstanceState.WARM


def test_warm_instances_are_prepared_once_before_a_scale_out_takes_them(caplog):
    """prepare_warm (e.g. locking a host copy of the weights) runs when a warm instance is
    healthy, not on the scale-out path; a pool filled without waiting is prepared at start;
    a failing preparation is logged and the instance still scales out."""
    calls = []

    def prepare(inst):
        calls.append((inst.id, inst.weights_source))
        if len(calls) == 2:
            raise RuntimeError("the driver refused to lock the pages")

    reg = FakeRegistry()
    with LocalLauncher(spec(prepare_warm=prepare), reg, warm_pool_size=1) as L:
        (w,) = L.fill_warm_pool()
        assert calls == [(w.id, None)] and w.prepared  # before any weights or scale-out
        L.warm_pool_size = 0  # no refill
        assert L.start() is w and calls == [(w.id, None)]  # not again on the scale-out path
        L.warm_pool_size = 1
        (w2,) = L.fill_warm_pool(wait=False)
        assert calls == [(w.id, None)] and not w2.prepared
        with caplog.at_level("WARNING", logger="slocore.scaling"):
            assert L.start() is w2 and w2.weights_source == "peer"
        assert calls[1][0] == w2.id and "refused to lock" in caplog.text


def test_switch_role_in_place_and_by_restart():
    reg = FakeRegistry()
    with LocalLauncher(spec(), reg) as L:
        inst = L.start("prefill")
        same = L.switch_role(inst.id, "decode")
        assert same is inst and inst.role == "decode"
        assert json.loads(http_get(inst.url + "/info")[1])["role"] == "decode"
        assert reg.events[-2:] == [("draining", inst.url), ("ready", inst.url, "decode")]
    with LocalLauncher(spec(switch_role=None), FakeRegistry()) as L:
        a = L.start("prefill")
        b = L.switch_role(a.id, "decode")
        assert b is not a and a.state == InstanceState.STOPPED and b.role == "decode"


def test_failed_engine_is_reported():
    bad = spec(command=lambda port, role, warm: [sys.executable, "-c", "raise SystemExit(2)"])
    with LocalLauncher(bad, FakeRegistry()) as L:
        with pytest.raises(RuntimeError, match="exited with 2"):
            L.start()


def test_apply_scale_decisions():
    try:
        from slocore import _core

        decisions = [_core.ScaleDecision(_core.ScaleAction.SCALE_OUT, _core.Role.DECODE)]
    except ImportError:
        decisions = [{"action": "scale_out", "role": "decode"}]
    reg = FakeRegistry()
    with LocalLauncher(spec(), reg) as L:
        (inst,) = L.apply(decisions)
        assert inst.role == "decode"
        L.apply([{"action": "scale_in", "instance": inst.id}])
        assert inst.state == InstanceState.STOPPED
    assert _decision_fields({"action": "SwitchRole", "role": "prefill", "instance": 3}) == ("switch_role", "prefill", 3)
    with pytest.raises(ValueError):
        _decision_fields({"action": "grow"})


# --- CPU cores of a launched process -----------------------------------------------------
needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity calls here")
REPORT_CPUS = "import json, os; print(json.dumps(sorted(os.sched_getaffinity(0))))"


def _launched_report(launcher):
    """Spawn one `python -c` child through the launcher; the JSON it prints."""
    inst = launcher._spawn("colocated", warm=False)
    assert inst.proc.wait(60) == 0
    with open(inst.log_path) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def _reporting_spec(tmp_path, **kw):
    return spec(command=lambda port, role, warm: [sys.executable, "-c", REPORT_CPUS], log_dir=str(tmp_path), **kw)


@needs_affinity
def test_launched_process_gets_the_configured_cores(tmp_path):
    core = min(os.sched_getaffinity(0))
    with LocalLauncher(_reporting_spec(tmp_path, cpus=[core])) as L:
        assert _launched_report(L) == [core]


@needs_affinity
def test_launched_process_gets_every_startup_core_not_the_launching_threads_mask(tmp_path):
    """A launching thread pinned to one core (as an OpenMP runtime pins its threads) must not
    pass that mask on: by default the child gets every core the process started with."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two cores to tell a narrowed mask from the full one")
    out = {}

    def launch_from_a_pinned_thread():
        os.sched_setaffinity(0, {allowed[-1]})  # this thread only
        try:
            with LocalLauncher(_reporting_spec(tmp_path)) as L:
                out["cpus"] = _launched_report(L)
        except BaseException as e:  # noqa: BLE001 - reported below
            out["error"] = e

    t = threading.Thread(target=launch_from_a_pinned_thread)
    t.start()
    t.join(120)
    assert "error" not in out, out.get("error")
    assert out["cpus"] == allowed
    assert sorted(os.sched_getaffinity(0)) == allowed  # the test's own thread untouched


@pytest.mark.parametrize(
    "cpus, err",
    [([], ValueError), ([-1], ValueError), ([10**6], ValueError), (["0"], ValueError), ("0", TypeError)],
)
def test_bad_cpus_are_rejected_naming_the_field(cpus, err):
    with pytest.raises(err, match="EngineSpec.cpus"):
        LocalLauncher(spec(cpus=cpus))


def test_timeout_names_the_process_and_its_last_log_line(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="slocore.scaling")
    hang = "import time; print('still importing', flush=True); time.sleep(60)"
    s = spec(
        command=lambda port, role, warm: [sys.executable, "-c", hang],
        log_dir=str(tmp_path),
        startup_timeout_s=15,  # generous: the child must have printed its line by then
        progress_log_s=1,
        stop_grace_s=5,
    )
    with LocalLauncher(s) as L:
        with pytest.raises(TimeoutError, match="still importing"):
            L.start("colocated")
        assert [i.state for i in L.instances()] == [InstanceState.FAILED]
    notes = [r.getMessage() for r in caplog.records if "not healthy yet" in r.getMessage()]
    assert notes and "pid " in notes[-1] and "cores " in notes[-1]


def test_openmp_binding_of_the_router_is_not_passed_to_engines(tmp_path, monkeypatch):
    """libgomp pins the thread that loads it to GOMP_CPU_AFFINITY's first core (`import torch`
    in a launched engine would then run on core 0 only): the router's value is not passed
    on; one set in EngineSpec.env is."""
    report = "import json, os; print(json.dumps([os.environ.get(k) for k in ('GOMP_CPU_AFFINITY', 'OMP_PLACES', 'X')]))"
    monkeypatch.setenv("GOMP_CPU_AFFINITY", "0")
    monkeypatch.setenv("OMP_PLACES", "{0}")
    monkeypatch.setenv("X", "kept")
    cmd = lambda port, role, warm: [sys.executable, "-c", report]  # noqa: E731
    with LocalLauncher(spec(command=cmd, log_dir=str(tmp_path / "a"))) as L:
        assert _launched_report(L) == [None, None, "kept"]
    with LocalLauncher(spec(command=cmd, log_dir=str(tmp_path / "b"), env={"GOMP_CPU_AFFINITY": "1"})) as L:
        assert _launched_report(L) == ["1", None, "kept"]
