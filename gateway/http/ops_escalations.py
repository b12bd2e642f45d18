"""Operator endpoints for escalations (API.md "Operations", "Escalations and reminders"); role
``operator``. ``GET /v1/ops/escalations?state=open|acknowledged|resolved|all`` (default ``open``:
every unresolved episode, acknowledged or not), ``POST .../{id}/acknowledge`` and
``POST .../{id}/resolve`` with ``{"note"}``. Resolving never changes an attempt."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute, Route

from gateway.auth.tokens import Principal
from gateway.domain.paging import PageRequest
from gateway.domain.timestamps import rfc3339
from gateway.escalations import operator
from gateway.escalations.operator import KEYSET, EscalationState
from gateway.http.ops import action
from gateway.http.paging import listing
from gateway.http.query import AfterId
from gateway.services import Services


class EscalationQuery(AfterId):
    state: EscalationState = "open"


def escalation_body(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "escalation_id": row["escalation_id"],
        "escalation_key": row["escalation_key"],
        "reason": row["reason"],
        "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None,
        "raised_at": rfc3339(row["raised_at"]),
        "acknowledged_at": rfc3339(row["acknowledged_at"]),
        "reminder_count": row["reminder_count"],
        "resolved_at": rfc3339(row["resolved_at"]),
        "details": row["details"],
    }


async def _list(services: Services, query: EscalationQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.list_escalations(services.db, query.state, page, after=query.after)


async def _acknowledge(services: Services, escalation_id: int, _by: Principal, _note: str) -> dict[str, Any]:
    return await operator.acknowledge(services.db, services.clock, services.settings, escalation_id)


async def _resolve(services: Services, escalation_id: int, _by: Principal, note: str) -> dict[str, Any]:
    return await operator.resolve(services.db, services.clock, escalation_id, note=note)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/escalations", listing("operator", EscalationQuery, KEYSET, _list, escalation_body),
              methods=["GET"]),
        Route("/v1/ops/escalations/{escalation_id:int}/acknowledge",
              action("escalation_acknowledged", "escalation_id", _acknowledge, escalation_body), methods=["POST"]),
        Route("/v1/ops/escalations/{escalation_id:int}/resolve",
              action("escalation_resolved", "escalation_id", _resolve, escalation_body, needs_note=True),
              methods=["POST"]),
    ]
