"""``POST /v1/webhooks/{endpoint_id}``: provider notifications (API.md "Provider notifications").

No bearer token: the request authenticates by its signature. 401 with the rejection's code and
nothing written when it does not verify; 204 once the recording transaction has committed (a
duplicate of a handled notification included); 503 when it could not be recorded, so the
provider redelivers (seed 004: "a notification that failed to record is never acknowledged as
handled"). The body is the exact bytes the envelope buffered (at most 256 KiB, else 413).
"""

from __future__ import annotations

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.domain.errors import (
    NotificationNotRecorded,
    WebhookSignatureInvalid,
    WebhookTimestampOutOfTolerance,
)
from gateway.domain.webhook_verdicts import TIMESTAMP_OUT_OF_TOLERANCE, Rejected
from gateway.http.app_services import services_of
from gateway.http.problems import from_error

log = structlog.get_logger("gateway.http.webhooks")


async def receive(request: Request) -> Response:
    services = services_of(request)
    endpoint_id = request.path_params["endpoint_id"]
    body = await request.body()
    verified = services.notifications.verify(endpoint_id, request.headers, body)
    if isinstance(verified, Rejected):
        log.info("webhook_rejected", endpoint_id=endpoint_id, code=verified.code, reason=verified.reason)
        stale = verified.code == TIMESTAMP_OUT_OF_TOLERANCE
        error = WebhookTimestampOutOfTolerance if stale else WebhookSignatureInvalid
        return from_error(error())
    try:
        await services.notifications.handle(verified, body)
    except Exception as error:
        log.error("notification_not_recorded", endpoint_id=endpoint_id, provider_account=verified.account_id,
                  webhook_id=verified.webhook_id, error_type=type(error).__name__, exc_info=error)
        return from_error(NotificationNotRecorded())
    return Response(status_code=204)


def routes() -> list[BaseRoute]:
    return [Route("/v1/webhooks/{endpoint_id}", receive, methods=["POST"])]
