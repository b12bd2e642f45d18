"""Liveness and readiness (API.md, Operations): ``/healthz`` says the process is up, ``/readyz``
that the database and the broker both answer."""

from __future__ import annotations

import asyncio

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.http.app_services import services_of
from gateway.services import Services

READINESS_TIMEOUT_S = 2.0
log = structlog.get_logger("gateway.health")


async def healthz(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def _database(services: Services) -> None:
    await services.db.fetch_one("SELECT 1")


async def _broker(services: Services) -> None:
    await services.redis.ping()


async def readyz(request: Request) -> JSONResponse:
    services = services_of(request)
    checks = {"database": _database(services), "broker": _broker(services)}
    results: dict[str, str] = {}
    for name, check in checks.items():
        try:
            # Operational readiness, not a business deadline: wall-clock timeout on purpose.
            await asyncio.wait_for(check, READINESS_TIMEOUT_S)
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready", reported by type
            log.warning("readiness_check_failed", check=name, error_type=type(exc).__name__)
            results[name] = f"unavailable: {type(exc).__name__}"
    ready = all(value == "ok" for value in results.values())
    return JSONResponse({"status": "ready" if ready else "not ready", "checks": results},
                        status_code=200 if ready else 503)
