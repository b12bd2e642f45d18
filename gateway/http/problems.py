"""RFC 9457 problem documents with a stable machine-readable ``code`` (API.md, Conventions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.domain.errors import MethodNotAllowed, NotFound, PaygateError

PROBLEM_TYPE_BASE = "https://paygate.dev/problems/"

log = structlog.get_logger("gateway.http")


class ProblemResponse(JSONResponse):
    media_type = "application/problem+json"


def problem(status: int, code: str, title: str, detail: str | None = None,
            headers: Mapping[str, str] | None = None, **extra: Any) -> ProblemResponse:
    body: dict[str, Any] = {"type": PROBLEM_TYPE_BASE + code, "title": title, "status": status, "code": code}
    if detail:
        body["detail"] = detail
    body.update(extra)
    return ProblemResponse(body, status_code=status, headers=headers)


def from_error(error: PaygateError, headers: Mapping[str, str] | None = None) -> ProblemResponse:
    return problem(error.status, error.code, error.title, error.detail, headers=headers, **error.extra)


async def handle_paygate_error(_request: Request, exc: Exception) -> Response:
    if not isinstance(exc, PaygateError):
        raise exc
    return from_error(exc)


async def handle_http_exception(_request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):
        raise exc
    if exc.status_code == 404:
        return from_error(NotFound())
    if exc.status_code == 405:
        return from_error(MethodNotAllowed(), headers=exc.headers)
    return problem(exc.status_code, f"http.{exc.status_code}", str(exc.detail), headers=exc.headers)


async def handle_unexpected(_request: Request, exc: Exception) -> Response:
    log.error("unhandled_error", error_type=type(exc).__name__, exc_info=exc)
    return problem(500, "internal", "Internal server error")
