"""Elastic scaling on real engines: fast scale-out by peer weight transfer
(HFX Sec. 6), warm pools and launchers.

Submodules that need torch (`weights`, `transfer`, `disk`) are imported on use, so
`import slocore.scaling` and the launchers work without the `scaling` extra.
"""

from slocore.scaling.launcher import (  # noqa: F401
    CommandTemplate,
    EngineSpec,
    Instance,
    InstanceRegistry,
    InstanceState,
    LocalLauncher,
    NullRegistry,
)

__all__ = [
    "CommandTemplate",
    "EngineSpec",
    "Instance",
    "InstanceRegistry",
    "InstanceState",
    "LocalLauncher",
    "NullRegistry",
]
