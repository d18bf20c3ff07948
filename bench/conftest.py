"""Benchmarks measure the C++ and the pure-Python reference side by side in one run and
print their ratio (this machine is shared and noisy: absolute times move, ratios less)."""

import pytest

_RESULTS: dict[str, dict[str, float]] = {}


@pytest.fixture
def record_ratio(benchmark):
    """record_ratio(group, impl): call after benchmark(...) to keep its median."""

    def rec(group: str, impl: str):
        if benchmark.disabled or benchmark.stats is None:  # --benchmark-disable: a smoke run
            return
        _RESULTS.setdefault(group, {})[impl] = benchmark.stats.stats.median

    return rec


def pytest_terminal_summary(terminalreporter):
    rows = [(g, r) for g, r in _RESULTS.items() if "cpp" in r and "python" in r]
    if not rows:
        return
    terminalreporter.section("C++ vs pure-Python reference (median, same run)")
    for g, r in rows:
        terminalreporter.write_line(
            f"{g:40s} cpp {r['cpp'] * 1e6:10.1f} us   python {r['python'] * 1e6:12.1f} us   "
            f"speed-up {r['python'] / r['cpp']:8.1f}x"
        )
