"""The one table of instance roles, used by serving, scaling and the simulator.

A role is what an instance does: ``colocated`` (prefill and decode on one engine), or one
side of a prefill/decode (P/D) split. Config files, the admin API and launchers spell roles
as these strings; the C++ core uses ``slocore._core.Role`` with the same members.
Pure Python; ``core_role`` loads ``slocore._core`` only when called.
"""

from __future__ import annotations

import functools

COLOCATED, PREFILL, DECODE = "colocated", "prefill", "decode"
ROLES = (COLOCATED, PREFILL, DECODE)
PD_ROLES = (PREFILL, DECODE)
# Where P/D metrics date a handed-off request's first token: at the prefill's end or at the
# decode's first step (simulate(pd_first_token=...), the CLIs' --pd-first-token).
PD_FIRST_TOKEN = PD_ROLES


def role_name(role) -> str:
    """'colocated'|'prefill'|'decode' from a string or a ``slocore._core.Role``."""
    s = role if isinstance(role, str) else getattr(role, "name", str(role))
    s = s.split(".")[-1].lower()
    if s not in ROLES:
        raise ValueError(f"unknown role {role!r} (known: {', '.join(ROLES)})")
    return s


@functools.cache
def core_role(role):
    """The ``slocore._core.Role`` of a role name (or Role)."""
    from slocore import _core

    return getattr(_core.Role, role_name(role).upper())
