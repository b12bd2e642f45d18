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
from gateway.effects.certify import Certifier
from gateway.http.app_services import services_of
from gateway.http.auth import authenticate, require
from gateway.payouts import records


async def keys(request: Request) -> JSONResponse:
    return JSONResponse(Certifier.of(services_of(request).settings).published())


async def order_certificate(request: Request) -> JSONResponse:
    principal = await authenticate(request)
    document = await services_of(request).orders.certificate(request.path_params["order_id"], principal.role,
                                                             principal.subject)
    if document is None:
        raise CertificateNotFound()
    return JSONResponse(document)


async def payout_certificate(request: Request) -> JSONResponse:
    principal = await require(request, "clerk", "operator", "admin")
    async with services_of(request).db.transaction() as conn:
        document = await records.certificate(conn, request.path_params["payout_id"],
                                             principal.tenant_id if principal.role == "clerk" else None)
    if document is None:
        raise CertificateNotFound()
    return JSONResponse(document)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/keys/certificates", keys, methods=["GET"]),
        Route("/v1/orders/{order_id}/payment/certificate", order_certificate, methods=["GET"]),
        Route("/v1/payouts/{payout_id}/certificate", payout_certificate, methods=["GET"]),
    ]
