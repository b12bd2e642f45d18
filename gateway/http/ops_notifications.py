"""``GET /v1/ops/notifications?state=unmatched|applied|all`` (the console's
reconciliation queue; default ``unmatched``): the stored notifications no attempt took at arrival,
paged like every list (:mod:`gateway.http.paging`) by when they arrived;
identifiers, type, status, amount and currency only, never a payload; for a payment notification
not yet applied, up to three ``candidates`` (Started or Unknown attempts of the same account,
amount and currency) as a hint.

``POST /v1/ops/notifications/{event_id}/apply`` (API.md "Operations"; "Precise details": the
provider's ``evt_...`` id, or the gateway's numeric ``notification_event_id`` for a notification
stored without one). Role ``operator``; body ``{"attempt_id"}``. 200 with the attempt as the
ordinary conditional transition left it; 404 ``notification.not_found`` / ``attempt.not_found``;
409 ``notification.already_applied`` / ``notification.not_applicable``."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.domain.paging import PageRequest
from gateway.domain.timestamps import rfc3339
from gateway.http.auth import require
from gateway.http.bodies import Body, parse_body
from gateway.http.paging import listing
from gateway.notifications.reconciliation import ReconciliationState
from gateway.notifications.repository import QUEUE
from gateway.services import Services


class ApplyNotification(Body):
    # A UUID arrives as a JSON string; strict mode would refuse anything but a UUID object.
    attempt_id: Annotated[UUID, Field(strict=False)]


class NotificationQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    state: ReconciliationState = "unmatched"


_DETAIL = ("provider_event_id", "type", "object", "provider_object_id", "client_reference", "status",
           "amount_minor", "currency", "unreadable")


def notification_body(row: dict[str, Any]) -> dict[str, Any]:
    detail = row["detail"]
    escalation_key = str(detail["escalation_key"])
    return {"notification_event_id": row["event_id"], "received_at": rfc3339(row["occurred_at"]),
            "provider_account": row["provider_account"], "notification_key": row["notification_key"],
            **{name: detail.get(name) for name in _DETAIL},
            # notification:<account>:<subject>:<problem>, or ...:<problem>-unidentified (domain.notification_keys)
            "problem": escalation_key.rsplit(":", 1)[1].removesuffix("-unidentified"),
            "escalation_key": escalation_key,
            "applicable": row["applied_to"] is None and detail.get("object") == "payment",
            "applied_to": str(row["applied_to"]) if row["applied_to"] else None,
            "applied_at": rfc3339(row["applied_at"]), "applied_by": row["applied_by"],
            "candidates": [str(attempt_id) for attempt_id in row["candidates"] or []]}


async def _queue(services: Services, query: NotificationQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await services.reconciliation.queue(query.state, page)


async def apply(request: Request) -> Response:
    principal = await require(request, "operator")
    body = await parse_body(request, ApplyNotification)
    services: Services = request.app.state.services
    applied = await services.reconciliation.apply_stored(
        request.path_params["event_id"], body.attempt_id, actor=f"operator-{principal.subject}")
    attempt = applied.attempt
    return JSONResponse({
        "notification_event_id": applied.notification_event_id,
        "attempt_id": str(attempt["attempt_id"]),
        "state": attempt["state"],
        "provider_status": attempt["provider_status"],
        "provider_payment_id": attempt["provider_payment_id"],
        "resolved_escalations": applied.resolved_escalations,
    })


def routes() -> list[BaseRoute]:
    return [Route("/v1/ops/notifications", listing("operator", NotificationQuery, QUEUE, _queue, notification_body),
                  methods=["GET"]),
            Route("/v1/ops/notifications/{event_id}/apply", apply, methods=["POST"])]
