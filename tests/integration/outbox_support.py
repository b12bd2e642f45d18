"""Shared pieces for the outbox, escalation and reminder tests: a real ASGI receiver standing in for
the merchant's and the operators' sinks (scriptable to fail or to hold a delivery open), attempts to
hang effects on, and settings that point the dispatcher at the receiver."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.clock import ManualClock
from gateway.escalations.store import raise_escalation
from gateway.outbox.dispatcher import dispatch_due
from gateway.outbox.store import attempt_ordering_key, enqueue
from gateway.settings import Settings
from gateway.store.db import Database
from gateway.store.registry import register_provider_accounts

SINK_BASE = "http://sinks.test"
# The path segment stands for a credential some alert services put in their URLs; it must never
# appear in a last_error or a log.
ALERT_PATH = "/alerts/hook-credential-0417"
MERCHANT_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass
class Receiver:
    """What the sinks received, oldest first, and how they should answer."""

    received: list[dict[str, Any]] = field(default_factory=list)
    failing: dict[str, int] = field(default_factory=dict)  # dedup_key -> status to answer
    held: dict[str, asyncio.Event] = field(default_factory=dict)  # dedup_key -> released when set
    arrived: dict[str, asyncio.Event] = field(default_factory=dict)  # dedup_key -> set on arrival

    def keys(self, sink: str = "merchant") -> list[str]:
        return [m["body"]["dedup_key"] for m in self.received if m["sink"] == sink]

    def hold(self, dedup_key: str) -> tuple[asyncio.Event, asyncio.Event]:
        """Keep the delivery of ``dedup_key`` open until the first event is set; the second is set
        once it has arrived."""
        self.held[dedup_key], self.arrived[dedup_key] = asyncio.Event(), asyncio.Event()
        return self.held[dedup_key], self.arrived[dedup_key]

    def app(self) -> Starlette:
        async def sink(request: Request) -> Response:
            raw = await request.body()
            body = json.loads(raw)
            key = body["dedup_key"]
            if key in self.arrived:
                self.arrived[key].set()
                await self.held[key].wait()
            if key in self.failing:
                return Response(b"receiver internals: stack trace", status_code=self.failing[key])
            self.received.append({"sink": "alerts" if request.url.path == ALERT_PATH else "merchant",
                                  "headers": dict(request.headers), "raw": raw, "body": body})
            return Response(status_code=204)

        return Starlette(routes=[Route("/merchant", sink, methods=["POST"]), Route(ALERT_PATH, sink, methods=["POST"])])


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The suite's settings with sinks, a signing secret and the rehearsal's outbox policy
    (API.md: 1 s doubling to 8 s, dead-lettered after 5 failures; reminders 10 s and 30 s)."""
    return settings.model_copy(update={
        "merchant_sink_url": f"{SINK_BASE}/merchant",
        "alert_sink_url": f"{SINK_BASE}{ALERT_PATH}",
        "merchant_signing_secret": SecretStr(MERCHANT_SECRET),
        "outbox_backoff_initial_s": 1.0,
        "outbox_backoff_max_s": 8.0,
        "outbox_max_failures": 5,
        "reminder_interval_s": 10.0,
        "acknowledged_reminder_interval_s": 30.0,
    })


@pytest.fixture
def receiver() -> Receiver:
    return Receiver()


@pytest.fixture
async def sinks(receiver: Receiver) -> AsyncIterator[httpx.AsyncBaseTransport]:
    """The dispatcher's transport to the sinks, routed to the receiver app over a real ASGI transport."""
    async with httpx.ASGITransport(app=receiver.app()) as transport:
        yield transport


@dataclass
class Seeder:
    """Writes what the outbox and escalation tests start from, as the resolving writers would."""

    db: Database
    clock: ManualClock
    settings: Settings

    async def attempt(self) -> uuid.UUID:
        """A Started attempt of a new order, for effects and escalations to refer to."""
        await register_provider_accounts(self.db, self.clock, self.settings.provider_accounts)
        attempt_id, order_id, now = uuid.uuid4(), f"ORD-{uuid.uuid4().hex[:8]}", self.clock.now()
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method,"
                " provider_account, state, created_at, updated_at)"
                " VALUES (%(o)s, 'm-1', 'cus-1', 4250, 'EUR', 'pm_card_visa', 'cardco:acct_store:test', 'Open',"
                " %(now)s, %(now)s)", {"o": order_id, "now": now})
            await conn.execute(
                "INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account,"
                " endpoint, api_version, client_reference, idempotency_key, request_body, amount_minor, currency,"
                " state, created_at, first_sent_at, escalation_deadline, next_check_at)"
                " VALUES (%(a)s, %(o)s, 'cus-1', 1, 'cardco:acct_store:test', 'http://cardco.test/v1/payments',"
                " '2026-11-01', %(ref)s, %(key)s, '{}', 4250, 'EUR', 'Started', %(now)s, %(now)s,"
                " %(deadline)s, %(now)s)",
                {"a": attempt_id, "o": order_id, "ref": f"{order_id}-a1", "key": str(uuid.uuid4()), "now": now,
                 "deadline": now + timedelta(hours=23)})
        return attempt_id

    async def effect(self, attempt_id: uuid.UUID, effect: str) -> int:
        """Queue a business effect for the attempt, as a resolving writer would."""
        async with self.db.transaction() as conn:
            message_id = await enqueue(conn, dedup_key=f"attempt:{attempt_id}:{effect}", kind=effect,
                                       payload={"attempt_id": str(attempt_id)}, now=self.clock.now(),
                                       attempt_id=attempt_id, ordering_key=attempt_ordering_key(attempt_id))
        if message_id is None:
            raise RuntimeError("the effect was queued already")
        return message_id

    async def escalate(self, key: str, attempt_id: uuid.UUID | None = None) -> int:
        async with self.db.transaction() as conn:
            escalation_id = await raise_escalation(conn, escalation_key=key, reason="deadline", now=self.clock.now(),
                                                   reminder_interval_s=self.settings.reminder_interval_s,
                                                   attempt_id=attempt_id)
        if escalation_id is None:
            raise RuntimeError("an episode is open already")
        return escalation_id

    async def message(self, message_id: int) -> dict[str, Any]:
        row = await self.db.fetch_one("SELECT * FROM outbox_messages WHERE message_id = %(id)s", {"id": message_id})
        if row is None:
            raise LookupError(message_id)
        return row


@dataclass
class World(Seeder):
    """A seeder plus the dispatcher's transport to the sinks and the receiver behind them."""

    sinks: httpx.AsyncBaseTransport
    receiver: Receiver

    async def dispatch(self) -> int:
        return await dispatch_due(self.db, self.clock, self.settings, self.sinks)

    async def fail_until_dead(self, dedup_key: str) -> None:
        """Let the sink refuse ``dedup_key`` through every retry until the row is dead-lettered,
        moving the clock to each next attempt; the sink accepts it again afterwards."""
        self.receiver.failing[dedup_key] = 500
        for _ in range(self.settings.outbox_max_failures):
            await self.dispatch()
            row = await self.db.fetch_one("SELECT next_attempt_at, dead_lettered_at FROM outbox_messages"
                                          " WHERE dedup_key = %(k)s", {"k": dedup_key})
            if row is None or row["dead_lettered_at"] is not None:
                break
            self.clock.set(row["next_attempt_at"])
        del self.receiver.failing[dedup_key]


@pytest.fixture
def world(db: Database, clock: ManualClock, settings: Settings, sinks: httpx.AsyncBaseTransport, receiver: Receiver) -> World:
    return World(db, clock, settings, sinks, receiver)
