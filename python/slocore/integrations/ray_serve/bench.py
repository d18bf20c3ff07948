"""Measure a Ray Serve app of emulated engines under a two-class SLO workload: the slocore
router against Ray's default power-of-two router on the same requests, same replicas.

    python -m slocore.integrations.ray_serve.bench --seeds 0 1 2 --replicas 4

Times are the engines' clock (real seconds / ``time_scale``), so SLOs and the latency model
are in the profile's seconds. Attainment and percentiles are ``slocore.summarize`` of a
``slocore.Recorder`` (the one definition of the metrics, ``csrc/slocore/core/metrics.h``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import statistics
import time

# (class, ttft_ms, tpot_ms, prompt range, output range); the share of tight requests is TIGHT_SHARE
CLASSES = {
    "tight": {"ttft_ms": 1000, "tpot_ms": 100, "prompt": (100, 600), "output": (10, 40)},
    "loose": {"ttft_ms": 10000, "tpot_ms": 400, "prompt": (1000, 3000), "output": (50, 150)},
}
TIGHT_SHARE = 0.5


def two_class_workload(n: int, rate: float, seed: int) -> list[dict]:
    """n requests, Poisson arrivals at `rate` per engine-clock second: dicts with arrival,
    slo_class, prompt_len, max_tokens and slo."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        cls = "tight" if rng.random() < TIGHT_SHARE else "loose"
        c = CLASSES[cls]
        out.append(
            {
                "arrival": t,
                "slo_class": cls,
                "prompt_len": rng.randint(*c["prompt"]),
                "max_tokens": rng.randint(*c["output"]),
                "slo": {"ttft_ms": c["ttft_ms"], "tpot_ms": c["tpot_ms"]},
            }
        )
    return out


async def replay(stream_fn, reqs: list[dict], time_scale: float) -> dict:
    """Send each request at its arrival (open loop) through `stream_fn(body)` (an async
    iterator of EmulatedEngineReplica chunks); returns {"summary", "errors", "replicas"}."""
    import slocore as _s

    rec = _s.Recorder()
    errors: list[str] = []
    placed: dict[int, int] = {}
    t0 = time.monotonic()

    def now() -> float:
        return (time.monotonic() - t0) / time_scale

    async def one(i: int, r: dict):
        await asyncio.sleep(max(0.0, r["arrival"] * time_scale - (time.monotonic() - t0)))
        req = _s.Request(
            i,
            r["arrival"],
            r["prompt_len"],
            output_len=r["max_tokens"],
            ttft=r["slo"]["ttft_ms"] / 1e3,
            tpot=r["slo"]["tpot_ms"] / 1e3,
            task=r["slo_class"],
        )
        rec.add(req)
        body = {k: r[k] for k in ("prompt_len", "max_tokens", "slo", "slo_class")}
        got = 0
        try:
            async for chunk in stream_fn(body):
                t = now()
                for _ in range(chunk["generated"] - got):
                    rec.token(i, t)
                got = chunk["generated"]
                placed[i] = chunk["replica"]
            rec.finish(i, now())
        except Exception as e:  # noqa: BLE001 - a failed request is counted, not raised
            rec.reject(i, now(), f"{type(e).__name__}: {e}")
            errors.append(f"request {i}: {type(e).__name__}: {e}")

    await asyncio.gather(*(one(i, r) for i, r in enumerate(reqs)))
    return {"summary": _s.summarize(rec), "errors": errors, "replicas": placed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("-n", type=int, default=160)
    p.add_argument("--rate", type=float, default=8.0, help="requests per engine-clock second")
    p.add_argument("--time-scale", type=float, default=0.2)
    p.add_argument("--policy", default=None, help="slocore policy (default: the router's DEFAULT_POLICY)")
    p.add_argument("--background", type=int, default=0, help="requests of outside load on replica rank 0")
    p.add_argument("--background-prompt", type=int, default=2000)
    p.add_argument("--background-output", type=int, default=100000)
    p.add_argument(
        "--routers",
        nargs="+",
        default=["slocore", "ray_pow2"],
        choices=["slocore", "slocore_plain", "ray_pow2"],
        help="slocore_plain: the slocore router behind a plain handle (no SloHandle token events)",
    )
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    import ray
    from ray import serve

    from slocore.integrations.ray_serve import EmulatedEngineReplica, SloHandle, slo_router_config, state

    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(proxy_location="Disabled")
    bg = (
        {0: {"n": a.background, "prompt": a.background_prompt, "output": a.background_output}} if a.background else None
    )
    rows = []
    for seed in a.seeds:  # the routers alternate: drift on a shared machine hits both
        for router in a.routers:
            opts = {"num_replicas": a.replicas, "max_ongoing_requests": 1000, "ray_actor_options": {"num_cpus": 0}}
            if router.startswith("slocore"):
                classes = {k: {"ttft_ms": c["ttft_ms"], "tpot_ms": c["tpot_ms"]} for k, c in CLASSES.items()}
                opts["request_router_config"] = slo_router_config(
                    a.policy, classes=classes, clock_scale=1 / a.time_scale
                )
            dep = serve.deployment(EmulatedEngineReplica, name="engine").options(**opts)
            app = f"bench-{router}-{seed}"  # a fresh app: a handle's router is kept per deployment name
            handle = serve.run(dep.bind(time_scale=a.time_scale, background=bg), name=app, route_prefix=None)
            if router == "slocore":
                stream = SloHandle(handle).stream
            else:
                h = handle.options(stream=True)

                def stream(body, h=h):
                    return h.generate.remote(body)

            time.sleep(1.0)  # routing stats (and outside load) in place
            res = asyncio.run(replay(stream, two_class_workload(a.n, a.rate, seed), a.time_scale))
            if router.startswith("slocore"):  # the requests went through SloRequestRouter, not Ray's default
                ours = [r for r in state.ROUTERS if r._deployment_id.app_name == app]
                assert ours and ours[-1].decisions >= a.n, f"{app}: the slocore router placed too few requests"
                print(json.dumps({"router": router, "seed": seed, "describe": ours[-1].describe()}), flush=True)
            s = res["summary"]
            rows.append(
                {
                    "router": router,
                    "seed": seed,
                    "attainment": s["attainment"],
                    "tight": s["attainment_by_task"].get("tight"),
                    "loose": s["attainment_by_task"].get("loose"),
                    "ttft_p99": s["ttft"]["p99"],
                    "errors": len(res["errors"]),
                }
            )
            rows[-1]["per_replica"] = dict(collections.Counter(res["replicas"].values()))
            print(json.dumps(rows[-1]), flush=True)
            serve.delete(app)
    serve.shutdown()
    ray.shutdown()
    if not a.json:
        print("| router | attainment | tight | loose | TTFT p99 s | errors |")
        print("|---|---|---|---|---|---|")
        for router in a.routers:
            rs = [r for r in rows if r["router"] == router]

            def ms(k, rs=rs):
                v = [r[k] for r in rs]
                return f"{statistics.mean(v):.3f} ± {statistics.pstdev(v):.3f}"

            print(
                f"| {router} | {ms('attainment')} | {ms('tight')} | {ms('loose')} | {ms('ttft_p99')} |"
                f" {sum(r['errors'] for r in rs)} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
