"""What CardCo answers, and how a faulty answer reaches the wire.

API.md "CardCo control API": `drop_response` and `timeout_before_effect` hold the connection
open without answering until the client gives up (or 60 s), then close it; `malformed_body`
and `empty_body` break the body; `delay_ms` delays the answer after the effect.

A `Reply` is the complete answer (status, headers, exact body bytes); it is what the
idempotency store saves, so a replay is byte-identical (`replayed` marks one, for a dialect that
says so in a header). How an error becomes a reply is the mount's dialect (`ErrorReply`):
CardCo's `Reply.error`, or Stripe's (provider_fake/stripe/errors.py). `render()` turns a reply plus the
response fault of the request into the ASGI response; the transport-level behaviour of a
dropped answer lives in one place, `DroppedResponse`, for the server and in-process alike.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from provider_fake.errors import InternalError, InvalidRequest, ProviderError, RateLimited
from provider_fake.faults import BEFORE_EFFECT, FaultRule

HOLD_DROPPED_S = 60.0
DROP_ACTIONS = frozenset({"drop_response", "timeout_before_effect"})


def encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    replayed: bool = False

    @classmethod
    def ok(cls, document: dict[str, Any]) -> Reply:
        return cls(200, encode(document))

    @classmethod
    def error(cls, error: ProviderError, status: int | None = None) -> Reply:
        return cls(status or error.status, encode(error.body()), error.headers())


class ErrorReply(Protocol):
    """How a mount's dialect answers an error (CardCo: `Reply.error`)."""

    def __call__(self, error: ProviderError, status: int | None = None) -> Reply: ...


def refusal(rule: FaultRule | None, errors: ErrorReply = Reply.error) -> Reply | None:
    """The answer of a fault that ends the request before any effect, else None.

    `timeout_before_effect` gets a placeholder: `render` drops it.
    """
    if rule is None or rule.action not in BEFORE_EFFECT:
        return None
    if rule.action == "rate_limit":
        return errors(RateLimited(rule.retry_after_s, rule.should_retry, rule.legacy_400))
    if rule.action == "reject_invalid":
        return errors(InvalidRequest())
    return errors(InternalError(), status=rule.status)


class DroppedResponse(Response):
    """Never answers: waits for the client to disconnect, at most HOLD_DROPPED_S, then closes.

    When the client gives up first (its own timeout), nothing at all is sent and the server
    closes the connection quietly; the client has seen a read timeout. When the hold passes
    first, the status line and a Content-Length are sent with no body and the connection is
    closed, so the client sees an incomplete message (a protocol error), never a response.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await asyncio.wait_for(_until_disconnect(receive), timeout=HOLD_DROPPED_S)
        except TimeoutError:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
        # Returning without completing the response makes the server close the connection.


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def render(reply: Reply, rule: FaultRule | None, headers: dict[str, str] | None = None) -> Response:
    """The response for `reply` under the request's fault rule (None: as is), with the mount's
    own `headers` added (they are not part of what a key saves)."""
    action = rule.action if rule else None
    if rule is not None and action in DROP_ACTIONS:
        return DroppedResponse(status_code=200)
    if rule is not None and action == "delay_ms":
        await asyncio.sleep(rule.delay_ms / 1000)
    body = reply.body
    if action == "malformed_body":
        body = body[: max(1, len(body) // 2)]
    elif action == "empty_body":
        body = b""
    return Response(body, reply.status, reply.headers | (headers or {}), media_type="application/json")
