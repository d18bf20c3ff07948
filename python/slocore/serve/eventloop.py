"""The event loop the router and the emulated engine run on, and an app served on it."""

from __future__ import annotations

import asyncio


def new_event_loop():
    """uvloop's event loop when installed (the serve extra lists it on Linux), else asyncio's."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


async def serve_app(app, host: str = "127.0.0.1", port: int = 0, **runner_kw) -> tuple:
    """Serve aiohttp `app` on host:port (0 = any free port) in the running loop, without an
    access log: (the runner, to clean up; the base URL)."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, **runner_kw)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner, f"http://{host}:{site._server.sockets[0].getsockname()[1]}"
