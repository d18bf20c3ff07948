"""`slocore fit` recovers the coefficients behind the bundled sample; malformed CSVs give
an error naming the file, row and column; the CLI exits 2 with a message, no traceback."""

import json

import pytest

from slocore import cli, fitting


def test_fit_recovers_sample_coefficients(capsys):
    assert cli.main(["fit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # The sample was made from these numbers with 5% log-normal noise (see its header).
    assert out["prefill"]["coeffs"]["b"] == pytest.approx(1.1e-4, rel=0.05)
    assert out["decode"]["coeffs"]["c'"] == pytest.approx(2.5e-4, rel=0.05)
    assert out["prefill"]["rms_rel_error"] < 0.08
    assert set(out["per_request"]) == {"t_c", "a_p", "b_p", "c_p", "a_d", "b_d"}


def test_fit_tps_and_per_request(tmp_path):
    tps = tmp_path / "tps.csv"
    tps.write_text(
        "batch_size,tokens_per_s\n"
        + "\n".join(f"{n},{-0.423 * n * n + 44.766 * n - 7.753}" for n in (1, 2, 4, 8, 16, 32, 48))
    )
    c = fitting.fit("tps", tps)["coeffs"]
    assert (c["a"], c["b"], c["c"]) == pytest.approx((-0.423, 44.766, -7.753), rel=1e-6)
    pr = tmp_path / "pr.csv"
    rows = ["time_s,sum_lq_sq,sum_lq_lkv,sum_lq,sum_lkv_decode,num_decode"]
    for i in range(1, 30):
        x = [i * i * 100.0, i * 50.0 * (i % 3), i * 10.0, i * 900.0 + (i % 5) * 77, float(i % 7 + 1)]
        t = 0.01 + 2e-8 * x[0] + 1e-8 * x[1] + 1e-4 * x[2] + 1e-6 * x[3] + 1e-4 * x[4]
        rows.append(",".join(str(v) for v in [t] + x))
    pr.write_text("\n".join(rows))
    got = fitting.fit("per_request", pr)["coeffs"]
    assert got["t_c"] == pytest.approx(0.01, rel=1e-6) and got["a_d"] == pytest.approx(1e-6, rel=1e-6)


@pytest.mark.parametrize(
    "body, match",
    [
        ("batch_size,input_len\n1,2\n", "missing column"),
        ("batch_size,input_len,prefill_s\n1,abc,0.1\n", "row 2: column 'input_len' is not a number"),
        ("batch_size,input_len,prefill_s\n1,2,0.1\n1,,0.2\n", "row 3: column 'input_len' is empty"),
        ("batch_size,input_len,prefill_s\n1,2,-0.1\n", "row 2: column 'prefill_s' must be finite"),
        ("batch_size,input_len,prefill_s\n", "no data rows"),
        ("batch_size,input_len,prefill_s\n1,100,0.1\n1,100,0.1\n1,100,0.1\n", "cannot fit a, b, c to 3 row.*must vary"),
        (b"\xff\xfe\x00garbage", "not a UTF-8 text"),
    ],
)
def test_malformed_csv(tmp_path, body, match):
    f = tmp_path / "bad.csv"
    f.write_bytes(body) if isinstance(body, bytes) else f.write_text(body)
    with pytest.raises(ValueError, match=match):
        fitting.fit("stage", f)


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    assert cli.main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["simulate", "--scenario", "nope", "--quiet"]) == 2
    assert "unknown scenario 'nope'" in capsys.readouterr().err
