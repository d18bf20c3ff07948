"""The README's first command needs `pip install .` alone (numpy, tqdm): `slocore simulate` on
its default runs with every optional extra missing, since the CLI imports a serving module's
dependencies only when its command runs."""

import os
import subprocess
import sys
from pathlib import Path

import slocore

# Every dependency pyproject.toml lists only under an extra (import names), and test tools.
EXTRAS = [
    "pydantic", "aiohttp", "prometheus_client", "yaml", "msgspec", "cbor2", "zmq", "orjson", "httptools",
    "tokenizers", "uvloop", "torch", "safetensors", "ray", "matplotlib", "openai", "hypothesis", "pytest",
    "pytest_benchmark", "kubernetes_validate", "vllm", "transformers",
]  # fmt: skip

RUN = """
import sys
for name in {extras!r}:
    sys.modules[name] = None  # importing it raises ImportError
from slocore.cli import main
sys.argv = ["slocore", "simulate"]
main()
"""


def test_slocore_simulate_runs_without_any_extra():
    env = {**os.environ, "PYTHONPATH": str(Path(slocore.__file__).parents[1])}
    p = subprocess.run(
        [sys.executable, "-c", RUN.format(extras=EXTRAS)], env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "slocore" in p.stdout and "attainment" in p.stdout.lower()
