"""Operator endpoints for provider-side reconciliation runs (docs/decisions/0071); role
``operator``. ``POST /v1/ops/reconciliation/runs`` with ``{"provider_account", "from", "to"}``
(RFC 3339) records a Running run and answers 202 at once: a worker executes it
(jobs/reconciliation.py), never the web request. ``GET .../runs/{run_id}`` is the run with its
counts and the findings a person may act on; ``GET .../runs`` pages the runs by request time."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain.errors import ReconciliationAccountUnknown, ReconciliationRunNotFound, ReconciliationWindowInvalid
from gateway.domain.paging import PageRequest
from gateway.domain.reconciliation import CLASSES
from gateway.domain.timestamps import rfc3339
from gateway.http.auth import require
from gateway.http.bodies import Body, parse_body
from gateway.http.paging import listing
from gateway.reconciliation.runs import KEYSET, Runs
from gateway.services import Services

RunState = Literal["Running", "Finished", "Failed", "all"]


class NewRun(Body):
    provider_account: str = Field(min_length=1, max_length=200)
    from_: AwareDatetime = Field(alias="from", strict=False)
    to: AwareDatetime = Field(strict=False)


class RunQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider_account: str | None = None
    state: RunState = "all"


def run_body(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": str(row["run_id"]),
        "provider_account": row["provider_account"],
        "from": rfc3339(row["window_from"]),
        "to": rfc3339(row["window_to"]),
        "state": row["state"],
        "counts": {name: row[name] for name in CLASSES},
        "objects_read": row["objects_read"],
        "started_by": row["started_by"],
        "requested_at": rfc3339(row["requested_at"]),
        "finished_at": rfc3339(row["finished_at"]),
        "failure": row["failure"],
    }


def finding_body(row: dict[str, Any]) -> dict[str, Any]:
    return {"kind": row["kind"], "provider_object_id": row["provider_object_id"], "class": row["class"],
            "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None, "details": row["details"],
            "found_at": rfc3339(row["found_at"])}


def _runs(services: Services) -> Runs:
    return Runs(services.db, services.clock, services.settings, services.http)


async def start_run(request: Request) -> JSONResponse:
    principal = await require(request, "operator")
    body = await parse_body(request, NewRun)
    services: Services = request.app.state.services
    if services.settings.account(body.provider_account) is None:
        raise ReconciliationAccountUnknown(f"provider account {body.provider_account} is not configured")
    if body.to <= body.from_:
        raise ReconciliationWindowInvalid("to must be after from")
    run = await _runs(services).start(body.provider_account, body.from_, body.to, principal.subject)
    return JSONResponse(run_body(run), status_code=202,
                        headers={"Location": f"/v1/ops/reconciliation/runs/{run['run_id']}"})


async def get_run(request: Request) -> JSONResponse:
    await require(request, "operator")
    services: Services = request.app.state.services
    try:
        run_id = uuid.UUID(request.path_params["run_id"])
    except ValueError:
        raise ReconciliationRunNotFound("run ids are UUIDs") from None
    runs = _runs(services)
    run = await runs.get(run_id)
    if run is None:
        raise ReconciliationRunNotFound()
    return JSONResponse(run_body(run) | {"findings": [finding_body(row) for row in await runs.findings(run_id)]})


async def _list(services: Services, query: RunQuery, page: PageRequest) -> list[dict[str, Any]]:
    state = None if query.state == "all" else query.state
    return await _runs(services).page(page, provider_account=query.provider_account, state=state)


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/ops/reconciliation/runs", start_run, methods=["POST"]),
        Route("/v1/ops/reconciliation/runs", listing("operator", RunQuery, KEYSET, _list, run_body), methods=["GET"]),
        Route("/v1/ops/reconciliation/runs/{run_id}", get_run, methods=["GET"]),
    ]
