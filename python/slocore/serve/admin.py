"""The admin API (bearer token ``admin_token``; disabled without one): the router's state,
and adding/removing backends at run time (what ``slocore.scaling.router_link`` drives).

    GET    /admin/state              backends, policies, summary of finished requests
    POST   /admin/backends           {name, url, role[, profile]} -> 201 and the backend
    DELETE /admin/backends/{name}    -> {"removed": name}
"""

from __future__ import annotations

import hmac

from aiohttp import web

import slocore as _s
from slocore.serve.config import from_dict
from slocore.serve.openai import BadRequest, error_body, jsonable, parse_json


class AdminApi:
    def __init__(self, router):
        self.r = router  # cfg, pool, health, dispatchers, recorder

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/admin/state", self.guard(self.state))
        app.router.add_post("/admin/backends", self.guard(self.add))
        app.router.add_delete("/admin/backends/{name}", self.guard(self.remove))

    def guard(self, fn):
        async def guarded(request: web.Request):
            tok = self.r.cfg.admin_token
            if not tok:
                return web.json_response(
                    error_body(
                        "admin endpoints are disabled: set admin_token in the config or SLOCORE_ADMIN_TOKEN",
                        403,
                        "forbidden",
                    ),
                    status=403,
                )
            auth = request.headers.get("Authorization", "")
            if not hmac.compare_digest(auth.encode(), f"Bearer {tok}".encode()):  # constant time
                return web.json_response(
                    error_body("admin endpoints need 'Authorization: Bearer <admin_token>'", 401, "unauthorized"),
                    status=401,
                )
            return await fn(request)

        return guarded

    async def state(self, request):
        r = self.r
        return web.json_response(
            {
                "backends": [b.describe() for b in r.pool],
                "policies": {d.label: d.describe() for d in r.dispatchers},
                "summary": jsonable(_s.summarize(r.recorder)) if len(r.recorder) else {},
            }
        )

    async def add(self, request):
        try:
            d = parse_json(await request.read())
            bc = from_dict({"backends": [d]}, "body").backends[0]
            if bc.url is None:
                raise BadRequest("url: required (emulated engines are added at start only)")
            b = self.r.pool.add(bc)
        except (BadRequest, ValueError) as e:
            return web.json_response(error_body(str(e), 400), status=400)
        await self.r.health.poll(b, 2.0)
        return web.json_response(b.describe(), status=201)

    async def remove(self, request):
        name = request.match_info["name"]
        try:
            self.r.pool.remove(name)
        except KeyError:
            return web.json_response(error_body(f"backend {name!r} not found", 404, "not_found"), status=404)
        return web.json_response({"removed": name})
