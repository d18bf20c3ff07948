"""Blocking HTTP for the launchers' threads, on aiohttp (the project's one HTTP client):
one private event loop in a daemon thread runs every request and its connection pool;
callers block on the result. Transport failures raise ``OSError`` (``ConnectionError``,
``TimeoutError``) so callers handle them as they would a socket error. Needs aiohttp (the
``serve`` extra); imported on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import threading

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_session = None


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="slocore-http", daemon=True).start()
            _loop = loop
            atexit.register(_close)
        return _loop


async def _request(method: str, url: str, body, headers, timeout: float) -> tuple[int, bytes]:
    import aiohttp

    global _session
    if _session is None:  # created in (and only touched from) the private loop
        _session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
    try:
        async with _session.request(
            method, url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as r:
            return r.status, await r.read()
    except asyncio.TimeoutError:
        raise TimeoutError(f"{method} {url}: no answer within {timeout:g} s") from None
    except aiohttp.ClientError as e:
        raise ConnectionError(f"{method} {url}: {type(e).__name__}: {e}") from None


def request(method: str, url: str, *, json=None, headers=None, timeout: float = 2.0) -> tuple[int, bytes]:
    """(status, body) of one HTTP request; any status is returned, transport failures raise OSError."""
    fut = asyncio.run_coroutine_threadsafe(_request(method, url, json, headers, timeout), _event_loop())
    return fut.result()


def _close() -> None:
    loop, session = _loop, _session
    if loop is None:
        return
    if session is not None:
        try:
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(2)
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
    loop.call_soon_threadsafe(loop.stop)
