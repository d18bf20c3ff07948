"""The link between the policy process and its data-path workers (``serve.policy_host``,
``serve.worker``): a Unix socket carrying frames of a 4-byte big-endian length and an orjson
list of events (each event a list whose first item names it). Each side queues events and
sends what one event-loop turn queued as one frame (``Link.send``), so a worker's token
notifications of one turn cost one write and one read.
"""

from __future__ import annotations

import asyncio
import struct

from slocore.serve import fastjson

_LEN = struct.Struct(">I")
MAX_FRAME = 64 << 20  # a longer frame is a protocol error


class Link:
    """One end of a connection: ``send(event)`` batches per loop turn; ``events()`` yields
    the received events in order (ends when the other side closes)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self._out: list = []
        self._loop = asyncio.get_running_loop()
        self.closed = False

    def send(self, event: list) -> None:
        if self.closed:
            return
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(event)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if not out or self.closed:
            return
        data = fastjson.dumps(out)
        try:
            self.writer.write(_LEN.pack(len(data)) + data)
        except (ConnectionError, RuntimeError):
            self.closed = True

    async def frames(self):
        """Each received frame (a list of events) until the other side closes."""
        try:
            while True:
                head = await self.reader.readexactly(4)
                (n,) = _LEN.unpack(head)
                if n > MAX_FRAME:
                    raise ValueError(f"ipc frame of {n} bytes")
                yield fastjson.loads(await self.reader.readexactly(n))
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self.closed = True

    def close(self) -> None:
        self._flush()
        self.closed = True
        try:
            self.writer.close()
        except RuntimeError:
            pass
