"""Payout requests over HTTP (API.md, Payouts; "Authentication" for clerks and approvers).

The clerk's tenant and approval limit come from the token, never the body. Another tenant's
payout answers 404 ``payout.not_found``. ``/submit`` binds the intent from the record: terms in
the body that differ from it are refused 409 ``payout.terms_mismatch`` before any decision.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.auth.tokens import Principal
from gateway.domain.errors import Forbidden
from gateway.domain.payout_terms import TERMS
from gateway.http.app_services import services_of
from gateway.http.auth import require
from gateway.http.bodies import Body, Identifier, parse_body
from gateway.payouts import decisions, recalls, records, views
from gateway.payouts.config import attempt_timings

Purpose = Annotated[str, Field(min_length=1, max_length=500)]
# JSON carries times as RFC 3339 strings: parsed, not coerced from anything else.
Moment = Annotated[AwareDatetime, Field(strict=False)]


class Terms(Body):
    beneficiary_id: Identifier
    destination_id: Identifier
    amount_minor: Annotated[int, Field(gt=0, le=2**63 - 1)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    purpose: Purpose | None = None
    release_at: Moment | None = None


class NewPayout(Terms):
    payout_id: Identifier
    purpose: Purpose
    release_at: Moment


class SubmitBody(Terms):
    payout_id: Identifier | None = None


class Acknowledgment(Body):
    reason_code: Literal["destination.recently-changed"]


class Empty(Body):
    pass


class Revocation(Body):
    reason: Annotated[str, Field(min_length=1, max_length=500)]


def _correlation_id(request: Request) -> str:
    return str(request.state.correlation_id)


async def _clerk(request: Request) -> Principal:
    principal = await require(request, "clerk")
    if principal.tenant_id is None:
        raise Forbidden("a clerk token needs a tenant")
    return principal


def _terms(body: Terms) -> dict[str, Any]:
    return body.model_dump(include=set(TERMS), exclude_none=True)


async def create_payout(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    body = await parse_body(request, NewPayout)
    services = services_of(request)
    row, created = await records.create_payout(
        services.db, services.clock.now(), tenant_id=str(clerk.tenant_id), requester_id=clerk.subject,
        correlation_id=_correlation_id(request), terms=_terms(body), payout_id=body.payout_id)
    async with services.db.transaction() as conn:
        view = await views.payout_view(conn, row)
    return JSONResponse(view, status_code=201 if created else 200)


async def get_payout(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    services = services_of(request)
    async with services.db.transaction() as conn:
        row = await records.get_payout(conn, request.path_params["payout_id"], clerk.tenant_id)
        return JSONResponse(await views.payout_view(conn, row))


async def _decide(request: Request, clerk: Principal, **asked: Any) -> JSONResponse:
    """One decision on the payout in the path, by this clerk (``asked``: the endpoint's stage,
    acknowledgment, terms or approval; decisions.DecisionRequest)."""
    services = services_of(request)
    result = await decisions.decide(services.db, services.clock, attempt_timings(services.settings),
                                    decisions.DecisionRequest(
                                        payout_id=request.path_params["payout_id"], tenant_id=str(clerk.tenant_id),
                                        actor_id=clerk.subject, correlation_id=_correlation_id(request),
                                        approval_limit_minor=clerk.approval_limit_minor or 0, **asked))
    return JSONResponse(views.decision_view(result.decision, result.grant))


async def submit(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    body = await parse_body(request, SubmitBody)
    return await _decide(request, clerk, stage="submit", terms=_terms(body), submitted_payout_id=body.payout_id)


async def acknowledge(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    body = await parse_body(request, Acknowledgment)
    return await _decide(request, clerk, acknowledgment=body.reason_code)


async def approve(request: Request) -> JSONResponse:
    """A fresh decision under an approver: a clerk of the tenant, not the requester, whose limit
    covers the amount (API.md, Authentication)."""
    clerk = await _clerk(request)
    await parse_body(request, Empty)
    return await _decide(request, clerk, approving=True)


async def reauthorize(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    await parse_body(request, Empty)
    return await _decide(request, clerk, stage="reauthorize")


async def recall(request: Request) -> JSONResponse:
    """A separate operation with its own decision and attempts (docs/decisions/0015): the clerk of
    the payout's tenant asks; 409 ``payout.not_recallable`` unless Paid."""
    clerk = await _clerk(request)
    await parse_body(request, Empty)
    services = services_of(request)
    result = await recalls.decide_recall(services.db, services.clock, attempt_timings(services.settings),
                                         recalls.RecallRequest(
                                             payout_id=request.path_params["payout_id"],
                                             tenant_id=str(clerk.tenant_id), actor_id=clerk.subject,
                                             correlation_id=_correlation_id(request)))
    return JSONResponse(recalls.recall_decision_view(result.decision, result.grant))


async def cancel(request: Request) -> JSONResponse:
    clerk = await _clerk(request)
    await parse_body(request, Empty)
    services = services_of(request)
    await records.cancel_payout(services.db, services.clock.now(), request.path_params["payout_id"],
                                tenant_id=str(clerk.tenant_id), actor=clerk.subject,
                                correlation_id=_correlation_id(request))
    async with services.db.transaction() as conn:
        row = await records.get_payout(conn, request.path_params["payout_id"], clerk.tenant_id)
        return JSONResponse(await views.payout_view(conn, row))


async def revoke(request: Request) -> JSONResponse:
    principal = await require(request, "operator", "admin")
    body = await parse_body(request, Revocation)
    services = services_of(request)
    grant = await decisions.revoke_grant(services.db, services.clock.now(), request.path_params["grant_id"],
                               reason=body.reason, actor=f"{principal.role}-{principal.subject}",
                               correlation_id=_correlation_id(request))
    return JSONResponse(views.grant_view(grant))


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/payouts", create_payout, methods=["POST"]),
        Route("/v1/payouts/{payout_id}", get_payout, methods=["GET"]),
        Route("/v1/payouts/{payout_id}/submit", submit, methods=["POST"]),
        Route("/v1/payouts/{payout_id}/acknowledge", acknowledge, methods=["POST"]),
        Route("/v1/payouts/{payout_id}/approve", approve, methods=["POST"]),
        Route("/v1/payouts/{payout_id}/reauthorize", reauthorize, methods=["POST"]),
        Route("/v1/payouts/{payout_id}/cancel", cancel, methods=["POST"]),
        Route("/v1/payouts/{payout_id}/recall", recall, methods=["POST"]),
        Route("/v1/grants/{grant_id}/revoke", revoke, methods=["POST"]),
    ]
