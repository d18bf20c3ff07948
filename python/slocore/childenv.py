"""Child processes (engines, launchers' instances, vLLM in its own venv) must import this
very slocore build, wherever it is: an in-tree dev build or an installed wheel. They must
not see anything else from this interpreter's site-packages, since a vLLM venv's numpy or
torch would be shadowed. ``slocore_only_path()`` is a folder that holds just a ``slocore``
link to the imported package; put it first on the child's PYTHONPATH.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import slocore


@functools.cache
def slocore_only_path() -> str:
    d = Path(tempfile.mkdtemp(prefix="slocore-pythonpath-"))
    (d / "slocore").symlink_to(Path(slocore.__file__).resolve().parent, target_is_directory=True)
    return str(d)


def child_env(**extra: str) -> dict:
    """os.environ with slocore_only_path() first on PYTHONPATH, plus ``extra``."""
    path = os.pathsep.join(p for p in (slocore_only_path(), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)
