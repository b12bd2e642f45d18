"""``POST /v1/ops/notifications/{event_id}/apply`` (API.md "Operations"; "Precise details": the
provider's ``evt_...`` id, or the gateway's numeric ``notification_event_id`` for a notification
stored without one). Role ``operator``; body ``{"attempt_id"}``. 200 with the attempt as the
ordinary conditional transition left it; 404 ``notification.not_found`` / ``attempt.not_found``;
409 ``notification.already_applied`` / ``notification.not_applicable``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.http.auth import require
from gateway.http.bodies import Body, parse_body
from gateway.services import Services


class ApplyNotification(Body):
    # A UUID arrives as a JSON string; strict mode would refuse anything but a UUID object.
    attempt_id: Annotated[UUID, Field(strict=False)]


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
    return [Route("/v1/ops/notifications/{event_id}/apply", apply, methods=["POST"])]
