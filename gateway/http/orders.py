"""Orders and checkout over HTTP (API.md, "Orders and checkout"). Handlers are thin: parse,
authorize, call one domain operation, map its result to a status code."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.auth.tokens import Principal
from gateway.domain.errors import OrderNotFound, OrderPaid, PaymentNotStarted, RequestInvalid, ReturnUrlRefused
from gateway.domain.return_urls import return_url_problem
from gateway.domain.timestamps import rfc3339
from gateway.http.app_services import services_of
from gateway.http.auth import authenticate
from gateway.http.bodies import Body, Identifier, parse_body
from gateway.http.problems import from_error
from gateway.payments.checkout import PaymentStatus, status_url
from gateway.payments.status import status_extensions
from gateway.refunds.decisions import RefundPolicy, request_refund
from gateway.refunds.views import decision_view, refunds_of
from gateway.services import Services

RETRY_AFTER_S = "2"


class NewOrder(Body):
    order_id: Identifier
    customer_id: Identifier
    amount_minor: Annotated[int, Field(gt=0, le=2**63 - 1)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    payment_method: Annotated[str, Field(pattern=r"^pm_[A-Za-z0-9_]{1,100}$")]
    provider_account: Annotated[str, Field(min_length=1, max_length=200)]
    # Where 3-D Secure's redirect flow returns the customer (gateway.domain.return_urls).
    return_url: Annotated[str, Field(min_length=1, max_length=4096)] | None = None


def order_body(order: dict[str, Any]) -> dict[str, Any]:
    return {
        "order_id": order["order_id"], "customer_id": order["customer_id"],
        "amount_minor": order["amount_minor"], "currency": order["currency"],
        "payment_method": order["payment_method"], "provider_account": order["provider_account"],
        "return_url": order["return_url"],
        "state": order["state"], "version": order["version"],
        "created_at": rfc3339(order["created_at"]), "updated_at": rfc3339(order["updated_at"]),
    }


async def _order_reader(request: Request) -> Principal:
    """Orders answer 404 to every caller who may not see them, never revealing that they exist."""
    principal = await authenticate(request)
    if principal.role not in ("merchant", "customer"):
        raise OrderNotFound()
    return principal


async def create_order(request: Request) -> Response:
    principal = await _order_reader(request)
    if principal.role != "merchant":
        raise OrderNotFound()
    body = await parse_body(request, NewOrder)
    services = services_of(request)
    if services.settings.account(body.provider_account) is None:
        raise RequestInvalid("provider_account is not a configured account",
                             errors=[{"field": "provider_account", "message": "not a configured provider account"}])
    problem = return_url_problem(body.return_url) if body.return_url is not None else None
    if problem is not None:
        raise ReturnUrlRefused(f"return_url {problem}", errors=[{"field": "return_url", "message": problem}])
    order, created = await services.orders.create(principal.subject, body.model_dump())
    return JSONResponse(order_body(order), status_code=201 if created else 200)


async def get_order(request: Request) -> Response:
    """The order with its refunds (``refund``, the latest one's summary, and
    ``refunds``, every decision, grant and attempt)."""
    principal = await _order_reader(request)
    services = services_of(request)
    order = await services.orders.get_owned(request.path_params["order_id"], principal.role, principal.subject)
    async with services.db.transaction() as conn:
        refunds = await refunds_of(conn, order["order_id"])
    return JSONResponse(order_body(order) | refunds)


class RefundRequest(Body):
    """``POST /v1/orders/{id}/refund``: a full refund of the paid order, so the body names nothing."""


async def refund_order(request: Request) -> Response:
    """A merchant's full refund of its paid order: a decision, and for an Allowed
    one its grant and job, through the same refund operation a payment after cancellation uses."""
    principal = await _order_reader(request)
    if principal.role != "merchant":
        raise OrderNotFound()
    await parse_body(request, RefundRequest)
    services = services_of(request)
    result = await request_refund(services.db, services.clock, RefundPolicy.of(services.settings),
                                  order_id=request.path_params["order_id"], merchant_id=principal.subject,
                                  correlation_id=str(request.state.correlation_id))
    return JSONResponse(decision_view(result.decision, result.grant))


async def cancel_order(request: Request) -> Response:
    principal = await _order_reader(request)
    if principal.role != "merchant":
        raise OrderNotFound()
    order = await services_of(request).orders.cancel(request.path_params["order_id"], principal.subject)
    return JSONResponse(order_body(order))


async def _status_response(services: Services, status: PaymentStatus) -> Response:
    """200 for final states and a current action; 202 with the status URL otherwise. The body
    carries the attempt's seed 001 effect record as an extension (``effect``, as for payouts)."""
    # With the payment's refund, if one was decided (the attempt itself stays as it is).
    status.body.update(status.extensions if status.extensions is not None else
                       await status_extensions(services.db, status.body["attempt_id"], status.body["order_id"]))
    if status.final or status.action_current:
        return JSONResponse(status.body)
    return JSONResponse(status.body, status_code=202, headers={"Location": status.body["status_url"]})


async def _customer(request: Request) -> Principal:
    principal = await authenticate(request)
    if principal.role != "customer":
        raise OrderNotFound()
    return principal


async def pay(request: Request) -> Response:
    principal = await _customer(request)
    services = services_of(request)
    order_id = request.path_params["order_id"]
    try:
        status = await services.checkout.pay(order_id, principal.subject)
    except OrderPaid as paid:
        attempt = paid.extra.get("attempt")
        extra: dict[str, Any] = {"attempt": PaymentStatus.of(attempt, services.clock.now()).body} if attempt else {}
        return from_error(OrderPaid(**extra))
    if status.state == "NotStarted":
        # This endpoint could not begin the recorded attempt, and nothing was sent (seed 004).
        return from_error(PaymentNotStarted(attempt=status.body), headers={
            "Retry-After": RETRY_AFTER_S, "Location": status_url(order_id)})
    return await _status_response(services, status)


async def payment_status(request: Request) -> Response:
    principal = await _customer(request)
    services = services_of(request)
    status = await services.checkout.status(request.path_params["order_id"], principal.subject)
    return await _status_response(services, status)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/orders", create_order, methods=["POST"]),
        Route("/v1/orders/{order_id}", get_order, methods=["GET"]),
        Route("/v1/orders/{order_id}/cancel", cancel_order, methods=["POST"]),
        Route("/v1/orders/{order_id}/refund", refund_order, methods=["POST"]),
        Route("/v1/orders/{order_id}/payment", pay, methods=["POST"]),
        Route("/v1/orders/{order_id}/payment/status", payment_status, methods=["GET"]),
    ]
