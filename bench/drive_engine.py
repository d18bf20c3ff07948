"""Streams random token-id completions at an OpenAI-compatible engine (the twin's client):

    python bench/drive_engine.py http://127.0.0.1:8100 --model tiny -n 1200 --concurrency 12

Prompts of 16-600 tokens and 8-96 output tokens (`ignore_eos`), uniform, seeded. Used to give
the vLLM plugin's online fit steps to learn from (docs/serving.md, the scheduler plugin)."""

import argparse
import asyncio
import random
import time

from slocore.twin.client import EngineClient


async def drive(url: str, model: str | None, n: int, concurrency: int, seed: int) -> None:
    rng = random.Random(seed)
    jobs = [(rng.randrange(16, 601), rng.randrange(8, 97)) for _ in range(n)]
    sem = asyncio.Semaphore(concurrency)
    async with EngineClient(url, model=model, timeout=300) as c:

        async def one(prompt: int, out: int):
            async with sem:
                await c.stream(prompt, out)

        await asyncio.gather(*(one(p, o) for p, o in jobs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--model")
    ap.add_argument("-n", type=int, default=1200)
    ap.add_argument("--concurrency", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.n < 1 or a.concurrency < 1:
        ap.error("-n and --concurrency must be >= 1")
    t = time.perf_counter()
    asyncio.run(drive(a.url, a.model, a.n, a.concurrency, a.seed))
    print(f"{a.n} streamed completions in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
