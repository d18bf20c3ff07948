"""The event loop the router and the emulated engine run on."""

from __future__ import annotations

import asyncio


def new_event_loop():
    """uvloop's event loop when installed (the serve extra lists it on Linux), else asyncio's."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()
