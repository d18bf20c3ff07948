"""The launcher's link to slocore's router (``slocore.serve.admin``): an
``InstanceRegistry`` that drives the router's admin API over HTTP, so a launcher in another
process (or on another machine) adds and removes backends as instances come and go.

    reg = RouterAdminRegistry("http://router:8000", token=os.environ["SLOCORE_ADMIN_TOKEN"])
    LocalLauncher(spec, reg).start("decode")   # POST /admin/backends once healthy

``on_instance_draining`` removes the backend from the router (no new requests; requests
already proxied finish), after which the launcher waits for the engine itself to be idle.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Optional

from slocore.scaling import blocking_http


class RouterAdminRegistry:
    def __init__(
        self,
        router_url: str,
        token: str,
        *,
        profile: Optional[str] = None,
        name_prefix: str = "scaled",
        timeout_s: float = 10.0,
    ):
        self.url = router_url.rstrip("/")
        self.token = token
        self.profile = profile
        self.prefix = name_prefix
        self.timeout_s = timeout_s
        self.names: dict[str, str] = {}  # engine url -> backend name

    def _call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        code, raw = blocking_http.request(
            method,
            self.url + path,
            json=body,
            timeout=self.timeout_s,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            return code, json.loads(raw or b"{}")
        except ValueError:
            if code < 400:
                raise
            return code, {}

    def name_for(self, url: str) -> str:
        if url not in self.names:
            p = urllib.parse.urlparse(url)
            self.names[url] = f"{self.prefix}-{p.hostname}-{p.port}"
        return self.names[url]

    def on_instance_ready(self, url: str, role: str) -> None:
        body = {"name": self.name_for(url), "url": url, "role": role}
        if self.profile:
            body["profile"] = self.profile
        code, resp = self._call("POST", "/admin/backends", body)
        if code != 201:
            raise RuntimeError(f"router refused backend {body['name']}: {code} {resp}")

    def on_instance_draining(self, url: str) -> None:
        code, resp = self._call("DELETE", f"/admin/backends/{urllib.parse.quote(self.name_for(url))}")
        if code not in (200, 404):
            raise RuntimeError(f"router could not remove {self.name_for(url)}: {code} {resp}")

    def on_instance_stopped(self, url: str) -> None:
        self.on_instance_draining(url)  # idempotent: 404 once removed
        self.names.pop(url, None)

    def backends(self) -> list[dict]:
        code, st = self._call("GET", "/admin/state")
        if code != 200:
            raise RuntimeError(f"router /admin/state: {code} {st}")
        return st.get("backends", [])

    def inflight(self, url: str) -> Optional[int]:
        """In-flight requests the router has on `url`, None once it no longer routes there
        (the launcher then asks the engine)."""
        name = self.name_for(url)
        for b in self.backends():
            if b.get("name") == name:
                return int(b.get("inflight", 0))
        return None
