"""A free TCP port for a child server (an engine, a router, a transfer peer) to bind."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on `host` now (another process may take it before the
    caller binds it: callers that start servers retry or fail loudly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
