"""The official ``openai`` client sent the same requests directly to an engine and through the
router; the parsed objects must match field by field (ids and timestamps excepted). Shared by
the emulated-engine test (fast suite) and the real-vLLM one (CI's vLLM step)."""

import asyncio
import threading

import openai

VOLATILE = {"id", "created", "system_fingerprint_created"}


def _tool_call_messages(model):
    return [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


def cases(model):
    """(name, endpoint, kwargs): the cases the issue found broken, and the plain ones."""
    chat = [{"role": "user", "content": "hello there"}]
    base = dict(model=model, temperature=0.0, seed=1)
    return [
        ("completion", "completions", dict(base, prompt="hello world", max_tokens=5)),
        ("completion-stream", "completions", dict(base, prompt="hello world", max_tokens=5, stream=True)),
        ("chat", "chat", dict(base, messages=chat, max_tokens=5)),
        ("chat-stop", "chat", dict(base, messages=chat, max_tokens=8, stop=["the"])),
        (
            "chat-stream-usage",
            "chat",
            dict(base, messages=chat, max_tokens=4, stream=True, stream_options={"include_usage": True}),
        ),
        (
            "chat-stream-continuous-usage",
            "chat",
            dict(
                base,
                messages=chat,
                max_tokens=4,
                stream=True,
                stream_options={"include_usage": True, "continuous_usage_stats": True},
            ),
        ),
        ("chat-stream-n2", "chat", dict(base, messages=chat, max_tokens=3, stream=True, n=2)),
        ("chat-content-null", "chat", dict(base, messages=_tool_call_messages(model), max_tokens=3)),
        ("chat-max-tokens-0", "chat", dict(base, messages=chat, max_tokens=0)),
        ("chat-priority", "chat", dict(base, messages=chat, max_tokens=3, extra_body={"priority": 0})),
        ("chat-vllm-extra", "chat", dict(base, messages=chat, max_tokens=3, extra_body={"top_k": 1})),
    ]


def strip(x):
    """x with ids and timestamps removed, recursively."""
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def merged(chunks: list) -> dict:
    """A stream as what it says, not how it was cut: vLLM coalesces tokens into chunks by
    timing (a loaded machine cuts the same output differently run to run, and fields such as
    system_fingerprint ride on whichever chunk it picks). Per choice: the joined text (or
    delta content), the last finish and stop reasons, the sorted set of keys seen; and the
    final usage and the top-level keys."""
    choices, usage, keys = {}, [], set()
    for c in chunks:
        keys.update(c)
        if c.get("usage") is not None:
            usage.append(c["usage"])
        for ch in c.get("choices") or []:
            m = choices.setdefault(ch.get("index"), {"text": "", "keys": set(), "finish": None, "stop": None})
            m["keys"].update(ch)
            delta = ch.get("delta") or {}
            m["keys"].update("delta." + k for k in delta)
            m["text"] += ch.get("text") or delta.get("content") or ""
            m["finish"] = ch.get("finish_reason") or m["finish"]
            m["stop"] = ch.get("stop_reason") if ch.get("stop_reason") is not None else m["stop"]
    return {
        "choices": {i: dict(m, keys=sorted(m["keys"])) for i, m in sorted(choices.items(), key=lambda x: str(x[0]))},
        "usage": usage[-1:],  # continuous usage stats: one per chunk, so only the final count is stable
        "keys": sorted(keys),
    }


def outcome(client: openai.OpenAI, endpoint: str, kw: dict):
    """What the client sees: the parsed object(s) (model_dump, extra fields included) or the
    error's class, status and body."""
    api = client.completions if endpoint == "completions" else client.chat.completions
    try:
        res = api.create(**kw)
        if kw.get("stream"):
            return ("stream", merged([strip(c.model_dump()) for c in res]))
        return ("object", strip(res.model_dump()))
    except openai.APIStatusError as e:
        return ("error", type(e).__name__, e.status_code, strip(e.body))


def compare(direct_url: str, router_url: str, model: str) -> list:
    """[(case, direct outcome, router outcome)] for every case where they differ."""
    d = openai.OpenAI(base_url=direct_url + "/v1", api_key="x", max_retries=0, timeout=120)
    r = openai.OpenAI(base_url=router_url + "/v1", api_key="x", max_retries=0, timeout=120)
    diffs = []
    for name, endpoint, kw in cases(model):
        a, b = outcome(d, endpoint, kw), outcome(r, endpoint, kw)
        if a != b:
            diffs.append((name, a, b))
    d.close()
    r.close()
    return diffs


class RouterThread:
    """A router (slocore.serve.router.Router on config dict `d`) on its own event loop in a
    thread, so a synchronous client can talk to it; ``url``, ``router``."""

    def __init__(self, d: dict):
        from aiohttp import web

        from slocore.serve import config as cfgmod
        from slocore.serve.router import Router

        self.loop = asyncio.new_event_loop()
        self.router = Router(cfgmod.from_dict(d))
        ready = threading.Event()

        async def start():
            self.runner = web.AppRunner(self.router.app(), access_log=None)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
            ready.set()

        self.thread = threading.Thread(
            target=lambda: (self.loop.run_until_complete(start()), self.loop.run_forever()), daemon=True
        )
        self.thread.start()
        if not ready.wait(60):
            raise RuntimeError("router did not start")

    def close(self):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
