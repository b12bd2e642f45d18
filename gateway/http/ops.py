"""The shape every operator action shares (API.md "Operations"): role ``operator``, a validated
body, one domain call, the result rendered as JSON, and a log line naming who acted (ids only).
Area modules (:mod:`gateway.http.ops_escalations`, :mod:`gateway.http.ops_outbox`) supply the call
and the rendering; their lists are :func:`gateway.http.paging.listing`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import structlog
from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.auth.tokens import Principal
from gateway.http.auth import require
from gateway.http.bodies import Body, parse_body
from gateway.services import Services

log = structlog.get_logger("gateway.ops")

Row = dict[str, Any]
Endpoint = Callable[[Request], Awaitable[JSONResponse]]
# An operator's note: required, not blank, bounded.
Note = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")]


class NoteBody(Body):
    note: Note


def action(event: str, id_param: str, act: Callable[[Services, int, Principal, str], Awaitable[Row]],
           render: Callable[[Row], Row], *, needs_note: bool = False) -> Endpoint:
    """``POST`` on one resource named by the integer path parameter ``id_param``; with
    ``needs_note`` the body must be ``{"note"}`` and ``act`` gets the note (else an empty one)."""

    async def endpoint(request: Request) -> JSONResponse:
        principal = await require(request, "operator")
        note = (await parse_body(request, NoteBody)).note if needs_note else ""
        services: Services = request.app.state.services
        target: int = request.path_params[id_param]
        row = await act(services, target, principal, note)
        log.info(event, **{id_param: target}, operator=principal.subject)
        return JSONResponse(render(row))

    return endpoint
