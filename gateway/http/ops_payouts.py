"""Operator endpoints for payouts and recalls across every tenant (the console's
payouts awaiting a person and payouts and recalls in Unknown); role ``operator``; read-only.

- ``GET /v1/ops/payouts?state=Unknown`` (default ``Unknown``; any payout state): payouts by
  creation, each with its latest ``attempt`` (or null).
- ``GET /v1/ops/payout-approvals``: Draft payouts whose latest decision is
  ``AcknowledgmentRequired`` or ``EscalationRecommended``, each with that ``decision`` and what it
  ``awaiting``: the act (``acknowledge`` or ``approve``), the rule, and the tenant's clerks who may
  give it now, by the rule the acknowledge and approve endpoints apply (gateway.domain.payout_approval).
  Those are clerks' acts (API.md, Authentication): an operator sees who may act, never acts for them.
- ``GET /v1/ops/payouts/{payout_id}``: what ``GET /v1/payouts/{id}`` shows, for any tenant, plus
  ``tenant_id``, ``awaiting`` and the payout's append-only ``history``, oldest first.
- ``GET /v1/ops/recalls?state=Unknown``: recall attempts (docs/decisions/0015) by claim.

The lists are paged like every list (:mod:`gateway.http.paging`: ``limit``, ``order``, ``cursor``
and the ``Link`` header), by creation (payouts) or claim (recalls).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.paging import PageRequest
from gateway.domain.payout_approval import Pending, who_may_act
from gateway.http.auth import require
from gateway.http.paging import listing
from gateway.payouts import operator
from gateway.payouts.operator import AWAITING, PAYOUTS, RECALLS, PayoutState, StateFilter
from gateway.pipeline.views import shown
from gateway.services import Services

PAYOUT_FIELDS = ("payout_id", "tenant_id", "requester_id", "beneficiary_id", "destination_id", "amount_minor",
                 "currency", "purpose", "release_at", "state", "version", "created_at", "updated_at")
ATTEMPT_FIELDS = ("attempt_id", "attempt_number", "client_reference", "provider_payout_id", "provider_status",
                  "outcome_reason", "claimed_at", "started_at", "sends", "checks", "next_check_at",
                  "escalation_deadline")
RECALL_FIELDS = ("attempt_id", "payout_id", "tenant_id", "recall_number", "state", "client_reference",
                 "provider_payout_id", "provider_recall_id", "provider_status", "outcome_reason", "amount_minor",
                 "currency", "claimed_at", "started_at", "sends", "checks", "next_check_at", "escalation_deadline",
                 "resolved_at")
EVENT_FIELDS = ("event_id", "kind", "occurred_at", "actor", "attempt_id", "decision_id", "grant_id",
                "correlation_id", "detail")


class _Filters(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PayoutQuery(_Filters):
    state: PayoutState = "Unknown"


class AwaitingQuery(_Filters):
    pass


class RecallQuery(_Filters):
    state: StateFilter = "Unknown"


def payout_body(row: dict[str, Any]) -> dict[str, Any]:
    attempt = None if row["attempt_id"] is None else shown(row, ATTEMPT_FIELDS) | {"state": row["attempt_state"]}
    return shown(row, PAYOUT_FIELDS) | {"attempt": attempt}


def _awaiting(pending: Pending | None) -> dict[str, Any] | None:
    return None if pending is None else {"action": pending.action, "rule": pending.rule,
                                         "clerks": list(pending.clerks)}


def awaiting_body(row: dict[str, Any]) -> dict[str, Any]:
    return shown(row, PAYOUT_FIELDS) | {
        "decision": shown(row, ("decision_id", "outcome", "reason", "policy_version", "decided_by", "decided_at")),
        "awaiting": _awaiting(row["pending"])}


async def _pending(services: Services, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row (a payout with its latest decision's ``outcome``) with who may act on it now."""
    clerks = await services.tokens.clerks_of(sorted({row["tenant_id"] for row in rows}))
    return [row | {"pending": who_may_act(outcome=row["outcome"], requester_id=row["requester_id"],
                                          amount_minor=row["amount_minor"], clerks=clerks[row["tenant_id"]])}
            for row in rows]


async def _payouts(services: Services, query: PayoutQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.payouts_in_state(services.db, query.state, page)


async def _awaiting_list(services: Services, query: AwaitingQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await _pending(services, await operator.payouts_in_state(services.db, "Draft", page, awaiting=True))


async def _recalls(services: Services, query: RecallQuery, page: PageRequest) -> list[dict[str, Any]]:
    return await operator.recalls_in_state(services.db, query.state, page)


async def get_payout(request: Request) -> JSONResponse:
    await require(request, "operator")
    services: Services = request.app.state.services
    view, history = await operator.payout_with_history(services.db, request.path_params["payout_id"])
    latest = view["decisions"][-1] if view["decisions"] else None
    pending = None
    if view["state"] == "Draft" and latest is not None:
        [row] = await _pending(services, [view | {"outcome": latest["outcome"]}])
        pending = row["pending"]
    return JSONResponse(shown(view, tuple(view)) | {"awaiting": _awaiting(pending),
                                                    "history": [shown(e, EVENT_FIELDS) for e in history]})


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/payouts", listing("operator", PayoutQuery, PAYOUTS, _payouts, payout_body), methods=["GET"]),
        Route("/v1/ops/payout-approvals", listing("operator", AwaitingQuery, AWAITING, _awaiting_list, awaiting_body),
              methods=["GET"]),
        Route("/v1/ops/payouts/{payout_id}", get_payout, methods=["GET"]),
        Route("/v1/ops/recalls", listing("operator", RecallQuery, RECALLS, _recalls,
                                         lambda row: shown(row, RECALL_FIELDS)), methods=["GET"]),
    ]
