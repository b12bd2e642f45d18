"""``GET /v1/ops/overview`` (API.md "Operations"; role ``operator``): the
console's home, the system at a glance. One read model (:mod:`gateway.store.overview`): checkout
attempts started and settled per minute by outcome over the last hour, attempts Unknown now and
the oldest one's age per kind, open escalations by reason, outbox backlog and dead letters,
provider calls per account (p50, p99, error rate, from the fleet's counters: docs/decisions/0063)
with its lookup tokens and any pause, payouts by state. Read-only."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.http.app_services import services_of
from gateway.http.auth import require
from gateway.store import overview
from gateway.store.counters import flush


async def get_overview(request: Request) -> JSONResponse:
    await require(request, "operator")
    services = services_of(request)
    await flush(services.db)  # this process's own provider calls too, as a /metrics scrape does
    return JSONResponse(await overview.read(services.db, services.settings, services.clock.now()))


def routes() -> list[BaseRoute]:
    return [Route("/v1/ops/overview", get_overview, methods=["GET"])]
