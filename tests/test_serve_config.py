"""Serve config (pydantic schema): errors name the field path; the YAML format is unchanged."""

import pytest

pytest.importorskip("pydantic", reason="the serve extra (pydantic) is not installed")

from slocore.serve import config as cfgmod  # noqa: E402


@pytest.mark.parametrize(
    "d, message",
    [
        ({"backends": [{"url": "http://a"}, {"url": "ftp://b"}]}, "config: backends[1].url: must be an http(s) URL"),
        (
            {"backends": [{"url": "http://a", "emulated": {}}]},
            "config: backends[0]: give exactly one of url or emulated",
        ),
        ({"backends": [{"url": "http://a", "role": "boss"}]}, "config: backends[0].role: "),
        (
            {"backends": [{"name": "x", "url": "http://a"}, {"name": "x", "url": "http://b"}]},
            "config: backends[1].name: duplicate 'x'",
        ),
        ({"slo": {"default": {"ttft_ms": 0, "tpot_ms": 1}}}, "config: slo.default.ttft_ms: "),
        ({"slo": {"priorities": {1: {"ttft_ms": 5, "tpot_ms": True}}}}, "config: slo.priorities[1].tpot_ms: "),
        ({"timeouts": {"idle_s": float("inf")}}, "config: timeouts.idle_s: "),
        ({"timeouts": {"idle": 1}}, "config: timeouts.idle: unknown key"),
        ({"slo": {"mappr": True}}, "config: slo.mappr: unknown key"),
        ({"retries": 1.5}, "config: retries: "),
        ({"poll_interval_s": -1}, "config: poll_interval_s: "),
        ({"listen": {"port": 70000}}, "config: listen.port: "),
        ({"listen": {"port": "80"}}, "config: listen.port: "),
    ],
)
def test_errors_name_the_field_path(d, message):
    with pytest.raises(ValueError) as e:
        cfgmod.from_dict(d)
    assert str(e.value).startswith(message), str(e.value)


def test_valid_file_keeps_its_meaning(monkeypatch):
    monkeypatch.setenv("SLOCORE_ADMIN_TOKEN", "env-token")
    c = cfgmod.from_dict(
        {
            "listen": {"host": "0.0.0.0", "port": 9000},
            "model": "m",
            "backends": [
                {"name": "p", "url": "http://p:1/", "role": "prefill", "profile": "h100-llama2-7b"},
                {"name": "d", "emulated": {"profile": "h100-llama2-7b", "time_scale": 0.5}, "role": "decode"},
                {"emulated": True, "role": "decode"},
            ],
            "prefill_policy": "round_robin",
            "decode_policy": {"name": "least_tokens", "params": {"a": 1}},
            "slo": {
                "default": {"ttft_ms": 500, "tpot_ms": 50},
                "priorities": {"0": {"ttft_ms": 100, "tpot_ms": 10, "deadline_ms": 900}},
                "mapper": True,
            },
            "timeouts": {"idle_s": 3},
            "retries": 0,
            "poll_interval_s": 0.25,
        }
    )
    assert (c.host, c.port, c.model, c.admin_token) == ("0.0.0.0", 9000, "m", "env-token")
    assert [(b.name, b.url, b.role, b.emulated) for b in c.backends] == [
        ("p", "http://p:1", "prefill", None),
        ("d", None, "decode", {"profile": "h100-llama2-7b", "time_scale": 0.5}),
        ("b2", None, "decode", {}),
    ]
    assert c.disaggregated and c.prefill_policy.name == "round_robin" and c.decode_policy.params == {"a": 1}
    assert c.slo_for(0).deadline_ms == 900 and c.slo_for(3).ttft_ms == 500 and c.mapper == {}
    assert c.timeouts.idle_s == 3 and c.timeouts.total_s == cfgmod.Timeouts().total_s
    assert c.retries == 0 and c.poll_interval_s == 0.25
    assert cfgmod.from_dict(None).policy.name == "least_outstanding" and cfgmod.from_dict({}).mapper is None


def test_launcher_cpus_reach_the_launched_engines():
    from slocore.serve.scaler import make_launcher

    sc = {"name": "hfx_threshold", "launcher": {"command": ["x", "{port}"], "cpus": [0]}}
    c = cfgmod.from_dict({"backends": [{"url": "http://a"}], "scaler": sc})
    assert c.scaler.launcher.cpus == [0] and make_launcher(c.scaler.launcher, None).cpus == (0,)
    assert cfgmod.from_dict({"backends": [{"url": "http://a"}], "scaler": {**sc, "launcher": {"command": ["x"]}}})
    for bad in ([], [-1], ["0"], [True]):
        with pytest.raises(ValueError, match=r"scaler\.launcher\.cpus"):
            cfgmod.from_dict(
                {"backends": [{"url": "http://a"}], "scaler": {**sc, "launcher": {"command": ["x"], "cpus": bad}}}
            )


def test_a_missing_or_binary_file_is_a_clean_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        cfgmod.load(tmp_path / "absent.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="bin.yaml: not a UTF-8 text"):
        cfgmod.load(tmp_path / "bin.yaml")
