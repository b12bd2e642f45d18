"""Operator endpoints for payment attempts (API.md "Operations"; "Precise details" → Shapes); role
``operator``. ``GET /v1/ops/attempts?state=Unknown`` (default ``Unknown``; any attempt state, or
``all``, the console's first page; ``after``, a previous page's last ``attempt_id``, starts beyond
it) lists attempts by creation,
paged like every list (:mod:`gateway.http.paging`); ``GET /v1/ops/attempts/{attempt_id}`` answers
``{"attempt": {...}, "events": [...]}``, events oldest first, or 404 ``attempt.not_found``.
Read-only: nothing here changes an attempt."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.errors import AttemptNotFound
from gateway.domain.paging import PageRequest
from gateway.domain.timestamps import rfc3339
from gateway.http.auth import require
from gateway.http.paging import listing
from gateway.payments import operator
from gateway.payments.operator import KEYSET, StateFilter
from gateway.services import Services

_TIMES = ("created_at", "first_sent_at", "escalation_deadline", "next_action_expires_at", "lease_acquired_at",
          "lease_expires_at", "next_check_at")
_PLAIN = ("order_id", "customer_id", "attempt_number", "provider_account", "endpoint", "api_version",
          "client_reference", "idempotency_key", "amount_minor", "currency", "state", "provider_status",
          "next_action_type", "outcome_reason", "provider_payment_id", "recovery_owner", "version")


class AttemptQuery(BaseModel):
    """Attempts in one state, or in every state (``all``); ``after``, the last ``attempt_id`` of a
    previous page, starts beyond it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: Literal[StateFilter, "all"] = "Unknown"
    after: uuid.UUID | None = None


def attempt_body(row: dict[str, Any]) -> dict[str, Any]:
    return {"attempt_id": str(row["attempt_id"]), **{name: row[name] for name in _PLAIN},
            **{name: rfc3339(row[name]) for name in _TIMES}}


def event_body(row: dict[str, Any]) -> dict[str, Any]:
    return {"event_id": row["event_id"], "kind": row["kind"], "occurred_at": rfc3339(row["occurred_at"]),
            "actor": row["actor"], "detail": row["detail"], "provider_account": row["provider_account"],
            "notification_key": row["notification_key"]}


async def _list(services: Services, query: AttemptQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.list_attempts(services.db, None if query.state == "all" else query.state, page,
                                        after=query.after)


async def get_attempt(request: Request) -> JSONResponse:
    await require(request, "operator")
    try:
        attempt_id = uuid.UUID(request.path_params["attempt_id"])
    except ValueError:
        raise AttemptNotFound("attempt ids are UUIDs") from None
    services: Services = request.app.state.services
    attempt, events = await operator.attempt_history(services.db, attempt_id)
    return JSONResponse({"attempt": attempt_body(attempt), "events": [event_body(event) for event in events]})


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/attempts", listing("operator", AttemptQuery, KEYSET, _list, attempt_body), methods=["GET"]),
        Route("/v1/ops/attempts/{attempt_id}", get_attempt, methods=["GET"]),
    ]
