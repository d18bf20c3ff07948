"""``SloHandle``: a Ray Serve deployment handle whose streamed tokens reach the slocore
router's policy (``on_token``, then ``on_finished`` when the stream ends), as the event
contract asks. A plain handle works too; its policy then sees only routing stats and Ray's
completion callback (no token events).

The handle tags the body with ``slocore_request_id``; the router that routed it (in this
process: Ray builds the router beside the handle) is found by that key.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from slocore.integrations.ray_serve.request import KEY_FIELD
from slocore.integrations.ray_serve.state import router_for_key


def count_generated(chunk, last: int) -> int:
    """Output tokens a chunk brings: ``EmulatedEngineReplica`` chunks carry the running
    count (``generated``); any other chunk counts one token."""
    if isinstance(chunk, dict) and isinstance(chunk.get("generated"), int):
        return max(0, chunk["generated"] - last)
    return 1


class SloHandle:
    def __init__(self, handle, method: str = "generate", count=count_generated):
        self.handle = handle.options(stream=True)
        self.method = method
        self.count = count

    async def stream(self, body: dict) -> AsyncIterator:
        """The deployment's chunks for `body` (a dict), reporting tokens to the router."""
        if not isinstance(body, dict):
            raise TypeError(f"body: SloHandle takes a dict, got {type(body).__name__}")
        key = body.get(KEY_FIELD) or uuid.uuid4().hex
        body = {**body, KEY_FIELD: key}
        gen = getattr(self.handle, self.method).remote(body)
        total = 0
        try:
            async for chunk in gen:
                n = self.count(chunk, total)
                total += n
                r = router_for_key(key)
                if r is not None and n:
                    r.on_tokens(key, n)
                yield chunk
        finally:
            r = router_for_key(key)
            if r is not None:
                r.on_stream_end(key)
