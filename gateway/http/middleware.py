"""The request envelope: a correlation id for every request, a hard body-size limit, and
``Connection: close`` on a response of a web worker holding more than its share of connections
(gateway/web_balance.py, docs/decisions/0081).

The body is read up front (it is at most ``max_body_bytes``), so a rejected request is refused
before any handler runs and nothing is written for it (API.md: "Request bodies over 256 KiB:
413 ... Nothing is written for a rejected request"). Handlers then see the exact bytes, which the
webhook endpoint needs for signature verification.
"""

from __future__ import annotations

import functools
import re
import time
import uuid

import structlog
from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.domain.errors import RequestTooLarge
from gateway.http.metrics import HTTP_REQUESTS, HTTP_SECONDS
from gateway.http.problems import from_error
from gateway.web_balance import closes_after_response

CORRELATION_HEADER = b"x-correlation-id"
_SAFE_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")
log = structlog.get_logger("gateway.http")


class RequestEnvelope:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        presented = headers.get(CORRELATION_HEADER) or headers.get(b"x-request-id") or b""
        correlation_id = presented.decode() if _SAFE_ID.match(presented) else f"cor_{uuid.uuid4().hex}"
        scope.setdefault("state", {})["correlation_id"] = correlation_id
        started = time.perf_counter()
        status_holder = {"status": 500}

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (CORRELATION_HEADER, correlation_id.encode())]
                if closes_after_response():  # this worker holds more than its share (docs/decisions/0081)
                    message["headers"].append((b"connection", b"close"))
            await send(message)

        with structlog.contextvars.bound_contextvars(correlation_id=correlation_id):
            try:
                body = await self._read_body(scope, receive, headers)
            except RequestTooLarge as error:
                await from_error(error)(scope, receive, send_with_id)
            else:
                await self.app(scope, _replay(body, receive), send_with_id)
            finally:
                elapsed = time.perf_counter() - started
                counter, histogram = _metrics(scope["method"], _route_template(scope), status_holder["status"])
                counter.inc()
                histogram.observe(elapsed)

    async def _read_body(self, scope: Scope, receive: Receive, headers: dict[bytes, bytes]) -> bytes:
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise RequestTooLarge(f"the body may be at most {self.max_body_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise RequestTooLarge(f"the body may be at most {self.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


@functools.cache
def _metrics(method: str, route: str, status: int) -> tuple[Counter, Histogram]:
    """The request counter and latency histogram children for one label set, looked up once per
    process (the label lookup is a lock and two dict walks per request otherwise). Routes are
    templates, so the label sets are few."""
    return HTTP_REQUESTS.labels(method, route, str(status)), HTTP_SECONDS.labels(method, route)


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"
