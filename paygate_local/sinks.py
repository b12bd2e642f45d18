"""The demo's two downstream sinks: merchant effects and operator alerts (API.md, Command line).

A small ASGI app (``uvicorn --factory paygate_local.sinks:create_app``) that keeps what it
receives in memory, oldest first: ``POST /merchant`` and ``POST /alerts`` record a message,
``GET`` on the same paths returns ``{"messages": [...]}`` in the shape of API.md, "Shapes".
The merchant's reference checkout page is served here too (``/demo/shop``, paygate_local.shop).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.domain.timestamps import rfc3339
from paygate_local import shop

SINKS = ("merchant", "alerts")


def _message(body: dict[str, Any]) -> dict[str, Any]:
    payload = body.get("payload", body)
    return {
        "kind": body.get("kind"),
        "dedup_key": body.get("dedup_key"),
        "attempt_id": body.get("attempt_id"),
        "escalation_id": body.get("escalation_id"),
        "payload": payload,
        "received_at": rfc3339(datetime.now(UTC)),
    }


def create_app() -> Starlette:
    received: dict[str, list[dict[str, Any]]] = {name: [] for name in SINKS}

    async def sink(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in received:
            return JSONResponse({"error": "no such sink"}, status_code=404)
        if request.method == "GET":
            return JSONResponse({"messages": received[name]})
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": "body must be JSON"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
        received[name].append(_message(body))
        return Response(status_code=204)

    return Starlette(routes=[*shop.routes(), Route("/{name}", sink, methods=["GET", "POST"])])
