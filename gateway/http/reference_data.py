"""Payout reference data over HTTP (API.md, Payouts, "Reference data"): admin upserts, each
bumping a version only when a policy-relevant field changes. A destination's provider token is
accepted here and never returned."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import available_timezones

from pydantic import Field, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.payout_errors import PolicyOperationNotFound
from gateway.domain.timestamps import rfc3339
from gateway.http.app_services import services_of
from gateway.http.auth import require
from gateway.http.bodies import Body, Identifier, parse_body
from gateway.payouts import reference


class TenantBody(Body):
    daily_limit_minor: Annotated[int, Field(gt=0, le=2**63 - 1)]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    payouts_suspended: bool
    settlement_time_zone: Annotated[str, Field(min_length=1, max_length=64)]

    @field_validator("settlement_time_zone")
    @classmethod
    def _iana(cls, value: str) -> str:
        if value not in available_timezones():
            raise ValueError("must be an IANA time zone name")
        return value


class BeneficiaryBody(Body):
    tenant_id: Identifier
    verified: bool
    status: Literal["Active", "Suspended", "Closed"]


class DestinationBody(Body):
    beneficiary_id: Identifier
    provider_token: Annotated[str, Field(min_length=1, max_length=200)]


class PolicyBody(Body):
    version: Annotated[str, Field(min_length=1, max_length=100)]


async def put_tenant(request: Request) -> JSONResponse:
    await require(request, "admin")
    body = await parse_body(request, TenantBody)
    services = services_of(request)
    row = await reference.upsert_tenant(services.db, services.clock.now(), request.path_params["tenant_id"],
                                        **body.model_dump())
    return JSONResponse(row)


async def put_beneficiary(request: Request) -> JSONResponse:
    await require(request, "admin")
    body = await parse_body(request, BeneficiaryBody)
    services = services_of(request)
    row = await reference.upsert_beneficiary(services.db, services.clock.now(), request.path_params["beneficiary_id"],
                                             **body.model_dump())
    return JSONResponse(row)


async def put_destination(request: Request) -> JSONResponse:
    principal = await require(request, "admin")
    body = await parse_body(request, DestinationBody)
    services = services_of(request)
    row = await reference.upsert_destination(
        services.db, services.clock.now(), request.path_params["destination_id"], beneficiary_id=body.beneficiary_id,
        provider_token=body.provider_token, actor=f"admin-{principal.subject}")
    return JSONResponse(_rfc3339_times(row))


async def put_policy(request: Request) -> JSONResponse:
    await require(request, "admin")
    operation = request.path_params["operation"]
    if operation not in reference.POLICY_OPERATIONS:
        raise PolicyOperationNotFound()
    body = await parse_body(request, PolicyBody)
    services = services_of(request)
    row = await reference.publish_policy(services.db, services.clock.now(), operation, body.version)
    return JSONResponse(_rfc3339_times(row))


def _rfc3339_times(row: dict[str, Any]) -> dict[str, Any]:
    return {key: rfc3339(value) if isinstance(value, datetime) else value for key, value in row.items()}


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/tenants/{tenant_id}", put_tenant, methods=["PUT"]),
        Route("/v1/beneficiaries/{beneficiary_id}", put_beneficiary, methods=["PUT"]),
        Route("/v1/destinations/{destination_id}", put_destination, methods=["PUT"]),
        Route("/v1/policy/{operation}", put_policy, methods=["PUT"]),
    ]
