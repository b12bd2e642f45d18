"""Operator endpoints for refunds of paid orders (docs/decisions/0019); role
``operator``; read-only.

- ``GET /v1/ops/refunds?state=all`` (default ``all``; ``Requested``, ``Expired`` or an attempt
  state): one item per refund grant, by when it was decided, with its order, cause and attempt;
  paged like every list (:mod:`gateway.http.paging`).
- ``GET /v1/ops/refunds/{order_id}``: the order (never its payment method), its refunds as
  ``GET /v1/orders/{id}`` shows them (decisions, grants, attempts with their effects) and the
  refunds' append-only ``history``, oldest first; 404 ``order.not_found``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.paging import PageRequest
from gateway.http.auth import require
from gateway.http.paging import listing
from gateway.pipeline.views import shown
from gateway.refunds import operator
from gateway.refunds.operator import KEYSET, RefundState
from gateway.services import Services

REFUND_FIELDS = ("grant_id", "order_id", "refund_number", "state", "grant_state", "provider_payment_id",
                 "not_before", "expires_at", "decision_id", "cause", "requested_by", "requested_at", "merchant_id",
                 "amount_minor", "currency", "order_state", "provider_account", "attempt_id", "client_reference",
                 "provider_refund_id", "provider_status", "outcome_reason", "claimed_at", "started_at", "sends",
                 "checks", "next_check_at", "escalation_deadline", "resolved_at")
ORDER_FIELDS = ("order_id", "merchant_id", "customer_id", "amount_minor", "currency", "provider_account", "state",
                "created_at", "updated_at", "version")
EVENT_FIELDS = ("event_id", "kind", "occurred_at", "actor", "attempt_id", "decision_id", "grant_id",
                "correlation_id", "detail")


class RefundQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    state: RefundState = "all"


async def _list(services: Services, query: RefundQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.list_refunds(services.db, query.state, page)


async def get_refunds(request: Request) -> JSONResponse:
    await require(request, "operator")
    services: Services = request.app.state.services
    order, refunds, history = await operator.refunds_with_history(services.db, request.path_params["order_id"])
    return JSONResponse({"order": shown(order, ORDER_FIELDS), **refunds,
                         "history": [shown(event, EVENT_FIELDS) for event in history]})


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/refunds", listing("operator", RefundQuery, KEYSET, _list, lambda row: shown(row, REFUND_FIELDS)),
              methods=["GET"]),
        Route("/v1/ops/refunds/{order_id}", get_refunds, methods=["GET"]),
    ]
