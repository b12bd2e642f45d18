"""Operator endpoints for the outbox (API.md "Operations"); role ``operator``.
``GET /v1/ops/outbox?state=pending|dead|dispatched`` (default ``pending``; ``discarded`` too),
``POST /v1/ops/outbox/{message_id}/retry`` (a dead-lettered or backing-off row becomes due now)
and ``POST /v1/ops/outbox/{message_id}/discard`` with ``{"note"}`` (dead-lettered rows only; the
row then counts as finished and stops blocking its successors). Payloads are never listed."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute, Route

from gateway.auth.tokens import Principal
from gateway.domain.paging import PageRequest
from gateway.domain.timestamps import rfc3339
from gateway.http.ops import action
from gateway.http.paging import listing
from gateway.http.query import AfterId
from gateway.outbox import operator
from gateway.outbox.operator import KEYSET, OutboxState
from gateway.services import Services

_TIMES = ("created_at", "next_attempt_at", "dispatched_at", "dead_lettered_at", "discarded_at")
_PLAIN = ("message_id", "dedup_key", "kind", "ordering_key", "delivery_attempts", "last_error",
          "discarded_by", "discard_note", "blocked_by")


class OutboxQuery(AfterId):
    state: OutboxState = "pending"


def message_body(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **{name: row[name] for name in _PLAIN},
        **{name: rfc3339(row[name]) for name in _TIMES},
        "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None,
    }


async def _list(services: Services, query: OutboxQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.list_messages(services.db, query.state, page, after=query.after)


async def _retry(services: Services, message_id: int, by: Principal, _note: str) -> dict[str, Any]:
    return await operator.retry(services.db, services.clock, message_id, operator=by.subject)


async def _discard(services: Services, message_id: int, by: Principal, note: str) -> dict[str, Any]:
    return await operator.discard(services.db, services.clock, message_id, operator=by.subject, note=note)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/outbox", listing("operator", OutboxQuery, KEYSET, _list, message_body), methods=["GET"]),
        Route("/v1/ops/outbox/{message_id:int}/retry",
              action("outbox_retried", "message_id", _retry, message_body), methods=["POST"]),
        Route("/v1/ops/outbox/{message_id:int}/discard",
              action("outbox_discarded", "message_id", _discard, message_body, needs_note=True), methods=["POST"]),
    ]
