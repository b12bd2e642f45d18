"""Effect certificates over HTTP (API.md, Payouts; "Authentication"; "Shapes"; seed 001).

``GET /v1/keys/certificates`` needs no token: it publishes every key that may have signed a
certificate, so anyone can verify one offline. A payout's certificate is readable by its tenant's
clerks, operators and admins; an order's (an extension) by the order's merchant and customer.
Everyone else gets the resource's 404, never a hint that it exists.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.effect_errors import CertificateNotFound
from gateway.domain.errors import OrderNotFound
from gateway.domain.payout_errors import PayoutNotFound
from gateway.effects.certify import Certifier, certificate_of
from gateway.http.auth import authenticate, require
from gateway.services import Services
from gateway.store.db import fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def keys(request: Request) -> JSONResponse:
    return JSONResponse(Certifier.of(_services(request).settings).published())


async def order_certificate(request: Request) -> JSONResponse:
    principal = await authenticate(request)
    async with _services(request).db.transaction() as conn:
        row = await fetch_one(conn, _SQL["order_certificate_attempt"], {"order_id": request.path_params["order_id"]})
        owners = {"merchant": row["merchant_id"], "customer": row["customer_id"]} if row else {}
        if owners.get(principal.role) != principal.subject:
            raise OrderNotFound()
        document = None if row is None or row["attempt_id"] is None else await certificate_of(conn, row["attempt_id"])
    if document is None:
        raise CertificateNotFound()
    return JSONResponse(document)


async def payout_certificate(request: Request) -> JSONResponse:
    principal = await require(request, "clerk", "operator", "admin")
    async with _services(request).db.transaction() as conn:
        row = await fetch_one(conn, _SQL["payout_certificate_attempt"], {"payout_id": request.path_params["payout_id"]})
        if row is None or (principal.role == "clerk" and principal.tenant_id != row["tenant_id"]):
            raise PayoutNotFound()
        document = None if row["attempt_id"] is None else await certificate_of(conn, row["attempt_id"])
    if document is None:
        raise CertificateNotFound()
    return JSONResponse(document)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/keys/certificates", keys, methods=["GET"]),
        Route("/v1/orders/{order_id}/payment/certificate", order_certificate, methods=["GET"]),
        Route("/v1/payouts/{payout_id}/certificate", payout_certificate, methods=["GET"]),
    ]
