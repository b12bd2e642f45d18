"""Delivering one outbox row over HTTP (seed 004, "Downstream Work").

Business effects go to ``merchant_sink_url``, signed with Standard Webhooks v1 under
``merchant_signing_secret`` (``webhook-id`` is the row's dedup key, stable across redeliveries,
so the merchant can deduplicate by it). Operator alerts go to ``alert_sink_url`` and to the log.
Both carry ``{"kind", "dedup_key", "attempt_id", "escalation_id", "payload"}``.

A delivery ends in ``None`` (the receiver answered 2xx) or a short error for ``last_error``. The
error never holds the URL (a sink URL can embed a credential), the receiver's body or the payload.
A sink that is not configured for a kind is a failure, never a silent drop.

Some kinds are not sent over HTTP but published to the job system: a ``payout-job`` row becomes
the Dramatiq message that wakes the payout executor (seed 000, "The Queue Message Is
Transport"). The job package passes those publishers in, so this module imports no broker.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson
import structlog

from gateway.clock import Clock
from gateway.domain.outbound_webhooks import sign_v1
from gateway.outbound import POOL, AiohttpTransport
from gateway.outbox.sinks import ALERTS, MERCHANT
from gateway.outbox.store import OPERATOR_ALERT
from gateway.settings import Settings

log = structlog.get_logger("gateway.outbox")

# Publishes one row's payload (references only) somewhere other than HTTP; raises on failure.
Publisher = Callable[[dict[str, Any], Clock], object]


def message_body(row: dict[str, Any]) -> bytes:
    """The exact bytes sent for ``row`` (the shape the sinks of API.md "Shapes" record), the same
    at every redelivery: compact JSON with sorted keys, written by orjson (~10x cheaper than the
    json module). A document orjson would write with non-ASCII text or DEL unescaped, or cannot
    write (an integer beyond 64 bits), is written by the json module, every such character
    escaped. (A float is written as orjson writes it: the same number, e.g. 1e-05 as 0.00001.)"""
    payload = row["payload"]
    message = {
        "kind": row["kind"],
        "dedup_key": row["dedup_key"],
        "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None,
        "escalation_id": payload.get("escalation_id"),
        "payload": payload,
    }
    try:
        body = orjson.dumps(message, option=orjson.OPT_SORT_KEYS)
        if body.isascii() and b"\x7f" not in body:
            return body
    except orjson.JSONEncodeError:
        pass
    return json.dumps(message, separators=(",", ":"), sort_keys=True).encode()


def _target(row: dict[str, Any], settings: Settings, clock: Clock,
            body: bytes) -> tuple[str, dict[str, str], dict[str, str]] | str:
    """The URL, headers and pool (gateway.outbox.sinks) for ``row``, or the reason it cannot be sent."""
    headers = {"content-type": "application/json", "user-agent": "paygate-outbox/1"}
    if row["kind"] == OPERATOR_ALERT:
        if not settings.alert_sink_url:
            return "alert_sink_url is not configured"
        return settings.alert_sink_url, headers, ALERTS
    if not settings.merchant_sink_url:
        return "merchant_sink_url is not configured"
    secret = settings.merchant_signing_secret.get_secret_value() if settings.merchant_signing_secret else ""
    if not secret.startswith("whsec_"):
        return "merchant_signing_secret is not configured as a whsec_ secret"
    timestamp = int(clock.now().timestamp())
    headers |= {
        "webhook-id": row["dedup_key"],
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_v1(secret, row["dedup_key"], timestamp, body),
    }
    return settings.merchant_sink_url, headers, MERCHANT


async def publish(row: dict[str, Any], publisher: Publisher, clock: Clock) -> str | None:
    """Hand ``row`` to its publisher (a blocking broker call, so off the event loop)."""
    try:
        await asyncio.to_thread(publisher, row["payload"], clock)
    except Exception as exc:  # noqa: BLE001 - any failure is this row's failure, retried on the backoff
        return f"publish failed: {type(exc).__name__}"
    return None


async def deliver(row: dict[str, Any], settings: Settings, clock: Clock, sinks: httpx.AsyncBaseTransport,
                  publishers: Mapping[str, Publisher] | None = None) -> str | None:
    """POST ``row`` to its sink within the delivery budget from that sink's pool of ``sinks``
    (gateway.outbox.sinks), or publish it, for a kind that has a publisher; None on success, else
    the error."""
    publisher = (publishers or {}).get(row["kind"])
    if publisher is not None:
        return await publish(row, publisher, clock)
    if row["kind"] == OPERATOR_ALERT and row["delivery_attempts"] == 0:
        # The log is the alert's second channel: ids and the reason code only, never the payload.
        log.warning("operator_alert", message_id=row["message_id"], dedup_key=row["dedup_key"],
                    escalation_id=row["payload"].get("escalation_id"),
                    escalation_key=row["payload"].get("escalation_key"),
                    reason=row["payload"].get("reason"), attempt_id=str(row["attempt_id"] or "") or None)
    body = message_body(row)
    target = _target(row, settings, clock, body)
    if isinstance(target, str):
        return target
    url, headers, sink = target
    try:
        async with clock.budget(settings.outbox_delivery_budget_s):
            status = await post(sinks, url, body, headers, sink)
    except TimeoutError:
        return f"no answer within the delivery budget of {settings.outbox_delivery_budget_s:g} s"
    except httpx.HTTPError as exc:
        return f"transport error: {type(exc).__name__}"
    if 200 <= status < 300:
        return None
    return f"sink answered HTTP {status}"


@functools.lru_cache(maxsize=16)
def parsed(url: str) -> httpx.URL:
    """A sink URL parsed once, not per delivery (httpx parses a string URL in Python: ~6% of a
    delivery's CPU in the dispatcher's profile)."""
    return httpx.URL(url)


async def post(transport: httpx.AsyncBaseTransport, url: str, body: bytes, headers: dict[str, str],
               sink: dict[str, str]) -> int:
    """POST ``body`` from the sink's pool of the sinks' transport (no client: no cookie jar, auth
    or redirects to work through) and read the answer to its end, so its connection is kept alive
    for the next delivery; a response cut off (the budget, an error) is closed, and with it the
    connection, never left held. The answer's status code. aiohttp's transport (the process's)
    answers with the status alone; any other (the tests' httpx transports) through httpx's models."""
    if isinstance(transport, AiohttpTransport):
        return await transport.status(url, body, headers, sink[POOL])
    response = await transport.handle_async_request(httpx.Request("POST", parsed(url), content=body,
                                                                  headers=headers, extensions=sink))
    try:
        await response.aread()
    finally:
        await response.aclose()
    return response.status_code
