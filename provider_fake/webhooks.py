"""Webhook events and their delivery.

API.md "provider_fake: CardCo": webhooks go to the URL configured per account, signed with that
account's secrets, retried on non-2xx with backoff; each event has an `id` that is stable across
redeliveries, while `webhook-id` names one delivery attempt (API.md "Provider notifications").
Webhook fault rules (operation `webhook`) are matched once per event when it is queued.

Times are the fake clock's: a retry is due `webhook_retry_schedule_s[n-1]` seconds after the
n-th failed attempt; after the last one the delivery is given up (`failed`).

What a delivery looks like is the account's dialect (a `WebhookFormat`): CardCo's Standard
Webhooks (`StandardWebhooks` here), or Stripe's Event objects with `Stripe-Signature`
(provider_fake/stripe/webhooks.py). Queueing, retries, faults and redelivery are the same for both.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import secrets
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provider_fake.clock import Clock, rfc3339
from provider_fake.config import Account, CardCoConfig
from provider_fake.faults import FaultBook, FaultRule
from provider_fake.objects import ProviderObject, new_id
from provider_fake.replies import encode
from provider_fake.signing import signature_header

# A reordered event waits for the account's next event; if none comes, it goes out this late.
REORDER_HOLD_S = 60.0


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    account: str
    created: datetime
    object: dict[str, Any]
    dialect: str = "cardco"


class WebhookFormat(Protocol):
    """One dialect's deliveries: the payload of an event (whose `data.object` has the money
    amount under `amount_field`), and the headers, signature included, of one attempt."""

    amount_field: str

    def payload(self, event: Event, account: Account | None) -> dict[str, Any]: ...

    def headers(self, account: Account, body: bytes, timestamp: int, forged: bool) -> dict[str, str]:
        """`forged`: signed with wrong keys (the `bad_signature` fault)."""
        ...


class StandardWebhooks:
    """CardCo's deliveries: API.md's payload, Standard Webhooks v1 (and v1a) signatures with a
    new `webhook-id` per attempt."""

    amount_field = "amount_minor"

    def payload(self, event: Event, account: Account | None) -> dict[str, Any]:
        return {
            "id": event.id,
            "type": event.type,
            "created": rfc3339(event.created),
            "data": {"object": event.object},
        }

    def headers(self, account: Account, body: bytes, timestamp: int, forged: bool) -> dict[str, str]:
        msg_id = new_id("msg")
        secrets_, key = account.webhook_secrets, account.signing_key()
        if forged:
            secrets_ = ["whsec_" + base64.b64encode(secrets.token_bytes(24)).decode() for _ in secrets_]
            key = Ed25519PrivateKey.generate() if key is not None else None
        return {
            "content-type": "application/json",
            "user-agent": "CardCo-Webhooks/1",
            "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature_header(secrets_, key, msg_id, timestamp, body),
        }


@dataclass
class Delivery:
    """One event on its way to one account's webhook URL, with every attempt made so far."""

    id: str
    event: Event
    body: bytes
    due_at: datetime
    bad_signature: bool = False
    held_for_reorder: bool = False
    fault: str | None = None  # the webhook fault rule that shaped this delivery (extension)
    state: str = "pending"
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {
            "delivery_id": self.id,
            "event_id": self.event.id,
            "type": self.event.type,
            "account": self.event.account,
            "state": self.state,
            "due_at": rfc3339(self.due_at),
            "held_for_reorder": self.held_for_reorder,
            "bad_signature": self.bad_signature,
            "fault": self.fault,
            "body": self.body.decode(),
            "attempts": list(self.attempts),
        }


class Webhooks:
    """The event log and the delivery queue of one CardCo instance."""

    def __init__(
        self,
        config: Callable[[], CardCoConfig],
        clock: Clock,
        faults: FaultBook,
        http_client: httpx.AsyncClient | None = None,
        formats: dict[str, WebhookFormat] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._faults = faults
        self._http_client = http_client
        self._formats: dict[str, WebhookFormat] = formats or {"cardco": StandardWebhooks()}
        self._order = itertools.count()
        self.events: dict[str, Event] = {}
        self.deliveries: list[Delivery] = []
        self._delivering = asyncio.Lock()

    def clear(self) -> None:
        self.events.clear()
        self.deliveries.clear()

    def payload(self, event: Event) -> dict[str, Any]:
        """The event as its account's dialect sends it."""
        return self._formats[event.dialect].payload(event, self._config().account(event.account))

    def emit(self, account: Account, obj: ProviderObject) -> Event:
        """Record `obj.event_type()` for the object's current state (`<kind>.<status>` in CardCo's
        dialect) and queue its delivery if the account's endpoint has that type enabled."""
        event = Event(
            id=new_id("evt"),
            type=obj.event_type(),
            account=account.id,
            created=self._clock.now(),
            object=obj.event_object(),
            dialect=account.dialect,
        )
        self.events[event.id] = event
        if account.webhook_url is not None and account.sends(event.type):
            self._queue(event, self._faults.match("webhook", obj.client_reference))
        return event

    def redeliver(self, event_id: str) -> Delivery:
        """Queue a clean new delivery of a recorded event, due now. KeyError if unknown."""
        return self._add(self.events[event_id], encode(self.payload(self.events[event_id])))

    def _faulty_body(self, event: Event, rule: FaultRule | None) -> bytes:
        """The payload as sent: `omit_event_id` drops `id`, `tamper_amount` adds one minor unit."""
        payload = self.payload(event)
        action = rule.action if rule else None
        if action == "omit_event_id":
            del payload["id"]
        elif action == "tamper_amount":
            payload["data"]["object"][self._formats[event.dialect].amount_field] += 1
        return encode(payload)

    def _queue(self, event: Event, rule: FaultRule | None) -> None:
        action = rule.action if rule else None
        delivery = self._add(event, self._faulty_body(event, rule))
        if rule is None:
            return
        delivery.fault = f"webhook:{action}"
        if action == "drop":
            delivery.state = "dropped"
        elif action == "delay_ms":
            delivery.due_at += timedelta(milliseconds=rule.delay_ms)
        elif action == "reorder":
            delivery.held_for_reorder = True
            delivery.due_at += timedelta(seconds=REORDER_HOLD_S)
        elif action == "bad_signature":
            delivery.bad_signature = True
        elif action == "duplicate":
            for _ in range(rule.count):
                self._add(event, delivery.body)

    def _add(self, event: Event, body: bytes) -> Delivery:
        delivery = Delivery(
            id=f"dlv_{next(self._order):06d}", event=event, body=body, due_at=self._clock.now()
        )
        self.deliveries.append(delivery)
        return delivery

    async def deliver_due(self) -> list[Delivery]:
        """Attempt, in queue order, every pending delivery due by the fake clock.

        One pass at a time (background tick and control calls alike), so events go out in order.
        """
        async with self._delivering:
            now = self._clock.now()
            due = [d for d in self.deliveries if d.state == "pending" and d.due_at <= now]
            if not due:
                return []
            return await self._deliver(due)

    async def _deliver(self, due: list[Delivery]) -> list[Delivery]:
        attempted: list[Delivery] = []
        async with self._client() as client:
            for delivery in due:
                if delivery.state != "pending":
                    continue
                await self._attempt(client, delivery)
                attempted.append(delivery)
                for held in self._release_held_before(delivery):
                    await self._attempt(client, held)
                    attempted.append(held)
        return attempted

    def _release_held_before(self, delivery: Delivery) -> list[Delivery]:
        """`reorder`: held events of the same account go out right after a later one."""
        if delivery.held_for_reorder:
            return []
        position = self.deliveries.index(delivery)
        released = [
            held
            for held in self.deliveries[:position]
            if held.held_for_reorder
            and held.state == "pending"
            and held.event.account == delivery.event.account
        ]
        for held in released:
            held.held_for_reorder = False
        return released

    def _client(self) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        """The injected client (left open: its owner closes it), else one for this pass."""
        if self._http_client is not None:
            return nullcontext(self._http_client)
        return httpx.AsyncClient()

    async def _attempt(self, client: httpx.AsyncClient, delivery: Delivery) -> None:
        config = self._config()
        account = config.account(delivery.event.account)
        now = self._clock.now()
        if account is None or account.webhook_url is None:
            delivery.state = "failed"
            delivery.attempts.append({"at": rfc3339(now), "error": "no webhook URL configured"})
            return
        form = self._formats[account.dialect]
        headers = form.headers(account, delivery.body, int(now.timestamp()), delivery.bad_signature)
        attempt: dict[str, Any] = {"at": rfc3339(now)}
        if "webhook-id" in headers:
            attempt = {"webhook_id": headers["webhook-id"]} | attempt
        delivery.attempts.append(attempt)
        try:
            response = await client.post(
                account.webhook_url, content=delivery.body, headers=headers, timeout=config.webhook_timeout_s
            )
        except httpx.HTTPError as error:
            attempt["error"] = f"{type(error).__name__}: {error}"
        else:
            attempt["status"] = response.status_code
            if response.is_success:
                delivery.state = "delivered"
                return
        self._schedule_retry(delivery, config.webhook_retry_schedule_s, now)

    @staticmethod
    def _schedule_retry(delivery: Delivery, schedule: list[float], now: datetime) -> None:
        failures = len(delivery.attempts)
        if failures > len(schedule):
            delivery.state = "failed"
        else:
            delivery.due_at = now + timedelta(seconds=schedule[failures - 1])
