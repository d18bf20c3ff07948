"""vLLM usually lives in its own venv (scripts/install_vllm_cpu.sh). Its processes need this
slocore build importable, and nothing else from this interpreter's site-packages (numpy or
torch of another version would shadow the venv's). ``slocore_only_path()`` is a folder that
holds just a ``slocore`` link to the imported package: put it on the child's PYTHONPATH.
"""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import slocore


@functools.lru_cache(maxsize=None)
def slocore_only_path() -> str:
    d = Path(tempfile.mkdtemp(prefix="slocore-pythonpath-"))
    (d / "slocore").symlink_to(Path(slocore.__file__).resolve().parent, target_is_directory=True)
    return str(d)


def child_env(**extra: str) -> dict:
    """os.environ with slocore_only_path() first on PYTHONPATH, plus ``extra``."""
    path = os.pathsep.join(p for p in (slocore_only_path(), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)
