"""RayLauncher: the LocalLauncher's policy (link when healthy, drain before stop, warm
pool, role switches) with every engine started by a Ray actor on some node of the cluster,
inside its own placement group (one bundle: CPUs plus GPUs, or Ascend NPUs as Ray's "NPU"
resource), so that a multi-device engine gets all its devices on one node.

    ray.init(address="auto")          # or ray.init() locally
    L = RayLauncher(spec, registry, bundle={"CPU": 4, "GPU": 1})
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from typing import Optional

from slocore.ports import free_port
from slocore.scaling.launcher import EngineSpec, Instance, InstanceRegistry, LocalLauncher

try:
    import ray
except ImportError:  # pragma: no cover - exercised only without the ray extra
    ray = None


class _EngineHost:
    """Runs one engine subprocess on the actor's node (the actor lives as long as it)."""

    def __init__(self):
        self.proc: Optional[subprocess.Popen] = None

    def start(self, command, env: Mapping[str, str], log_path: Optional[str]):
        ip = ray.util.get_node_ip_address()
        port = free_port("")  # any interface: the router reaches it at the node's address
        argv = [a.replace("{host}", ip) for a in command(port, self.role, self.warm)]
        out = open(log_path, "wb") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            argv, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        return ip, port, self.proc.pid

    def configure(self, role: str, warm: bool):
        self.role, self.warm = role, warm

    def poll(self):
        return None if self.proc is None else self.proc.poll()

    def stop(self, grace_s: float):
        p = self.proc
        if p is None or p.poll() is not None:
            return p.returncode if p else None
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)
        except ProcessLookupError:
            pass
        return p.returncode


class RayLauncher(LocalLauncher):
    """Engines under Ray actors, one placement group each. Needs ``ray.init()`` first."""

    def __init__(
        self,
        spec: EngineSpec,
        registry: InstanceRegistry | None = None,
        *,
        bundle: Mapping[str, float] | None = None,
        strategy: str = "STRICT_PACK",
        warm_pool_size: int = 0,
        pg_timeout_s: float = 60.0,
    ):
        if ray is None:
            raise ImportError("RayLauncher needs ray (pip install 'slocore[ray]')")
        if not ray.is_initialized():
            raise RuntimeError("RayLauncher: call ray.init() first")
        super().__init__(spec, registry, host="", warm_pool_size=warm_pool_size)
        self.bundle = dict(bundle or {"CPU": 1})
        self.strategy = strategy
        self.pg_timeout_s = pg_timeout_s
        self._actor_cls = ray.remote(_EngineHost)

    def _spawn_process(self, iid: int, role: str, warm: bool) -> Instance:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        pg = placement_group([self.bundle], strategy=self.strategy)
        ray.get(pg.ready(), timeout=self.pg_timeout_s)
        opts = {k.lower(): v for k, v in self.bundle.items() if k in ("CPU", "GPU")}
        res = {k: v for k, v in self.bundle.items() if k not in ("CPU", "GPU", "memory")}
        actor = self._actor_cls.options(
            num_cpus=opts.get("cpu", 0),
            num_gpus=opts.get("gpu", 0),
            resources=res or None,
            scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=0),
        ).remote()
        ray.get(actor.configure.remote(role, warm))
        log = None
        if self.spec.log_dir:
            os.makedirs(self.spec.log_dir, exist_ok=True)
            log = os.path.join(self.spec.log_dir, f"instance-{iid}.log")
        ip, port, _pid = ray.get(actor.start.remote(self.spec.command, dict(self.spec.env), log))
        inst = Instance(iid, ip, port, role, warm, handle=(actor, pg), log_path=log)
        return inst

    def _alive(self, inst: Instance) -> bool:
        if inst.handle is None:
            return False
        try:
            return ray.get(inst.handle[0].poll.remote(), timeout=10) is None
        except Exception:
            return False

    def _terminate(self, inst: Instance) -> None:
        if inst.handle is None:
            return
        actor, pg = inst.handle
        try:
            ray.get(actor.stop.remote(self.spec.stop_grace_s), timeout=self.spec.stop_grace_s + 10)
        except Exception:
            pass
        from ray.util.placement_group import remove_placement_group

        ray.kill(actor)
        remove_placement_group(pg)
        inst.handle = None
