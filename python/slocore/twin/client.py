"""An OpenAI-compatible engine seen from outside: who it is (``/v1/models``, ``/version``),
what its Prometheus ``/metrics`` say (parsed with prometheus_client), and timed streaming
completions with random token-id prompts (so no prefix-cache hits) and ``ignore_eos``.

Every failure that means "this is not an engine" or "it answers too slowly" raises
``EngineError`` (a ValueError) with a sentence saying what was asked and what came back.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field


class EngineError(ValueError):
    """The endpoint is unreachable, is not an OpenAI-compatible engine, or is too slow."""


@dataclass(eq=False)
class Stream:
    """One streamed completion: send time and each token's arrival (time.monotonic())."""

    prompt_len: int
    max_tokens: int
    sent: float
    tokens: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def ttft(self) -> float:
        return self.tokens[0] - self.sent


@dataclass
class Identity:
    url: str
    model: str
    engine: str  # "vllm", "slocore-emulated" or "unknown"
    version: str | None
    max_model_len: int | None
    metrics: bool  # /metrics answers in Prometheus text format


Metrics = dict  # sample name -> [(labels, value), ...]


def parse_metrics(text: str) -> Metrics:
    """Prometheus text (parsed by prometheus_client) -> {sample name: [(labels, value)]}."""
    from prometheus_client.parser import text_string_to_metric_families

    out: Metrics = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    return out


def total(metrics: Metrics, name: str) -> float | None:
    """Sum of every sample called `name` (any labels); None when there is none."""
    vals = metrics.get(name)
    return sum(v for _, v in vals) if vals else None


def labels_of(metrics: Metrics, name: str) -> dict[str, str] | None:
    """Labels of the first sample called `name` (e.g. vllm:cache_config_info)."""
    vals = metrics.get(name)
    return dict(vals[0][0]) if vals else None


class EngineClient:
    """Use as ``async with EngineClient(url) as c:``; one aiohttp session for all calls."""

    def __init__(self, url: str, model: str | None = None, timeout: float = 60.0, vocab: int = 1000, seed: int = 0):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise EngineError(f"url: expected http://HOST:PORT, got {url!r}")
        if not (timeout > 0):
            raise EngineError(f"timeout: must be > 0, got {timeout!r}")
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = float(timeout)
        self.vocab = int(vocab)
        self.rng = random.Random(seed)
        self.session = self.fresh = None

    async def __aenter__(self):
        import aiohttp

        from slocore.serve.upstream import connector

        self.session = aiohttp.ClientSession(connector=connector())
        # a retry after a stale pooled connection: on a new one (the pool may hold several the
        # engine closed at once)
        self.fresh = aiohttp.ClientSession(connector=connector(force_close=True))
        return self

    async def __aexit__(self, *exc):
        await self.session.close()
        await self.fresh.close()

    async def _get(self, path: str, timeout: float = 10.0):
        import aiohttp

        try:
            async with self.session.get(self.url + path, timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                return r.status, await r.text()
        except asyncio.TimeoutError:
            raise EngineError(f"{self.url}{path}: no answer in {timeout:g} s (engine too slow or hung)") from None
        except aiohttp.ClientError as e:
            raise EngineError(f"{self.url}{path}: cannot connect: {e}") from None

    async def identify(self) -> Identity:
        status, text = await self._get("/v1/models")
        try:
            data = json.loads(text)["data"]
            first = data[0]
            name = first["id"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError(
                f"{self.url} is not an OpenAI-compatible engine: GET /v1/models answered HTTP "
                f"{status} {text[:120]!r} (expected {{'data': [{{'id': ...}}]}})"
            ) from None
        if self.model is None:
            self.model = name
        elif self.model not in {d.get("id") for d in data if isinstance(d, dict)}:
            raise EngineError(
                f"model: {self.model!r} is not served at {self.url} (it serves "
                f"{', '.join(str(d.get('id')) for d in data if isinstance(d, dict))})"
            )
        mlen = first.get("max_model_len")
        metrics = await self.metrics()
        engine, version = "unknown", None
        if metrics is not None and any(k.startswith("vllm:") for k in metrics):
            engine = "vllm"
            if total(metrics, "slocore_engine_kv_blocks") is not None:
                engine = "slocore-emulated"
        if engine == "vllm":
            st, txt = await self._get("/version")
            try:
                version = json.loads(txt)["version"] if st == 200 else None
            except (ValueError, KeyError, TypeError):
                version = None
        elif engine == "slocore-emulated":
            import slocore

            version = slocore.__version__
        return Identity(
            self.url, self.model, engine, version, int(mlen) if isinstance(mlen, int) else None, metrics is not None
        )

    async def metrics(self) -> Metrics | None:
        """Parsed /metrics, or None when the endpoint has none in Prometheus text format."""
        try:
            status, text = await self._get("/metrics", timeout=self.timeout)
        except EngineError:
            return None
        if status != 200:
            return None
        try:
            return parse_metrics(text)
        except (ValueError, TypeError):
            return None

    async def stream(self, prompt_len: int, max_tokens: int, on_token=None) -> Stream:
        """One streaming /v1/completions call; token times are client arrival times.

        A chunk carrying k token ids counts k tokens at its arrival; the final usage count
        is checked against them."""
        import aiohttp

        from slocore.serve.config import STALE_RETRIES
        from slocore.serve.upstream import stale_connection

        prompt = [self.rng.randrange(3, self.vocab) for _ in range(int(prompt_len))]
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": int(max_tokens),
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.0,
            "return_token_ids": True,
        }
        for attempt in range(STALE_RETRIES + 1):
            st = Stream(int(prompt_len), int(max_tokens), time.monotonic())
            try:
                usage = await self._post_stream(st, body, on_token, fresh=attempt > 0)
                break
            except asyncio.TimeoutError:
                raise EngineError(
                    f"{self.url}: a {prompt_len}-token prompt with max_tokens={max_tokens} did not finish "
                    f"in {self.timeout:g} s (engine too slow, hung, or busy with other traffic)"
                ) from None
            except aiohttp.ClientError as e:
                # A pooled connection the engine closed as we sent (its keep-alive ran out
                # while this loop was late to drop it): nothing was computed, send it again.
                if stale_connection(e) and not st.tokens and attempt < STALE_RETRIES:
                    continue
                raise EngineError(f"{self.url}/v1/completions: {type(e).__name__}: {e}") from None
        want = (usage or {}).get("completion_tokens", len(st.tokens))
        if not st.tokens:
            raise EngineError(
                f"{self.url}/v1/completions streamed no tokens for a {prompt_len}-token prompt "
                "(not an OpenAI-compatible streaming engine?)"
            )
        if want != len(st.tokens):  # chunks without token ids: spread the rest over the last arrival
            st.tokens.extend([st.tokens[-1]] * max(0, want - len(st.tokens)))
            del st.tokens[want:]
        return st

    async def _post_stream(self, st: Stream, body: dict, on_token, fresh: bool = False) -> dict | None:
        """POST one streaming completion, appending token arrival times to `st`; its usage."""
        import aiohttp

        usage = None
        async with (self.fresh if fresh else self.session).post(
            self.url + "/v1/completions", json=body, timeout=aiohttp.ClientTimeout(total=self.timeout)
        ) as r:
            if r.status != 200:
                raise EngineError(f"{self.url}/v1/completions answered HTTP {r.status}: {(await r.text())[:200]}")
            async for line in r.content:
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                now = time.monotonic()
                try:
                    obj = json.loads(data)
                except ValueError:
                    raise EngineError(f"{self.url}/v1/completions: stream chunk is not JSON: {data[:100]!r}") from None
                for ch in obj.get("choices") or []:
                    k = len(ch.get("token_ids") or ()) or 1
                    st.tokens.extend([now] * k)
                    if on_token is not None:
                        on_token(st)
                if obj.get("usage"):
                    usage = obj["usage"]
        return usage
