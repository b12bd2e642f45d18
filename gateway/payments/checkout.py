"""The checkout flow (seed 004, "The Checkout Endpoint": PayAsync and GetStatusAsync).

``pay`` initiates each recorded attempt at most once and never sends a request it did not itself
move from NotStarted to Started. Each step is its own short transaction; none stays open across
the provider call. Once the attempt exists, the rest runs in a task of its own, shielded from the
customer's request, so a closed tab cancels neither the Started transition, nor the provider
call, nor the recording of its outcome; each runs under its own budget on the injected clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
import structlog

from gateway.clock import Clock
from gateway.domain.attempts import Evidence, action_is_current
from gateway.domain.errors import OrderNotFound, PaymentNotFound
from gateway.domain.timestamps import rfc3339
from gateway.effects.gate import SendGate
from gateway.effects.ledger import Held
from gateway.orders.repository import Orders
from gateway.payments.attempts import Attempt, Attempts, VersionConflict, as_started, retry_transaction, stored_request
from gateway.payments.client import PaymentClient
from gateway.payments.sends import Opened, PaymentSends
from gateway.payments.status import extensions_of, send_status_extensions
from gateway.settings import Settings
from gateway.store.db import Connection, Database

log = structlog.get_logger("gateway.checkout")

# Failures after which the write may or may not have committed: reload, never assume.
UNCONFIRMED = (psycopg.Error, TimeoutError, VersionConflict, OSError)


@dataclass(frozen=True)
class PaymentStatus:
    """API.md PaymentStatus, plus whether its next action is current (it decides 200 vs 202)."""

    body: dict[str, Any]
    state: str
    action_current: bool
    # The answer's ``effect`` and ``refund`` when they were read with the outcome (Checkout._record).
    extensions: dict[str, Any] | None = None

    @classmethod
    def of(cls, attempt: Attempt, now: datetime, extensions: dict[str, Any] | None = None) -> PaymentStatus:
        current = action_is_current(attempt["state"], attempt["next_action"], attempt["next_action_expires_at"], now)
        order_id = attempt["order_id"]
        body = {
            "order_id": order_id,
            "attempt_id": str(attempt["attempt_id"]),
            "attempt_number": attempt["attempt_number"],
            "client_reference": attempt["client_reference"],
            "state": attempt["state"],
            "provider_status": attempt["provider_status"],
            "next_action": attempt["next_action"] if current else None,
            "next_action_expires_at": rfc3339(attempt["next_action_expires_at"]) if current else None,
            "outcome_reason": attempt["outcome_reason"],
            "provider_payment_id": attempt["provider_payment_id"],
            "status_url": status_url(order_id),
            "client_secret": None,  # only Checkout._revealed fills it, for the owning customer (docs/decisions/0078)
        }
        return cls(body=body, state=attempt["state"], action_current=current, extensions=extensions)

    @property
    def sdk_action(self) -> bool:
        """The current action is one only the provider's browser SDK completes (Stripe's ``use_stripe_sdk``)."""
        action = self.body["next_action"]
        return self.action_current and isinstance(action, dict) and action.get("type") == "use_stripe_sdk"

    @property
    def final(self) -> bool:
        return self.state in ("Succeeded", "Failed", "NotApplied")


def status_url(order_id: str) -> str:
    return f"/v1/orders/{order_id}/payment/status"


class Checkout:
    def __init__(self, settings: Settings, clock: Clock, db: Database, orders: Orders, attempts: Attempts,
                 client: PaymentClient) -> None:
        self._settings = settings
        self._clock = clock
        self._orders = orders
        self._attempts = attempts
        self._client = client
        self._db = db
        self._sends = PaymentSends(SendGate(db, clock, settings.reminder_interval_s), client)  # seed 001
        self._running: set[asyncio.Task[PaymentStatus]] = set()

    async def pay(self, order_id: str, customer_id: str) -> PaymentStatus:
        """Start or report the order's live attempt (API.md ``POST /v1/orders/{id}/payment``)."""
        attempt = await self._attempts.get_or_create_live(order_id, customer_id)
        if attempt["state"] != "NotStarted":
            # Someone already started it: this click, tab or browser retry only reports.
            return await self._revealed(PaymentStatus.of(attempt, self._clock.now()), attempt["provider_account"])
        return await self._revealed(await self._detached(self._start_and_send(attempt)), attempt["provider_account"])

    async def status(self, order_id: str, customer_id: str) -> PaymentStatus:
        """Observation only: the order's latest attempt; never sends anything."""
        attempt = await self._attempts.latest_for_order(order_id)
        if attempt is None:
            if (await self._orders.get(order_id))["customer_id"] != customer_id:
                raise OrderNotFound()
            raise PaymentNotFound()
        if attempt["customer_id"] != customer_id:
            raise OrderNotFound()
        return await self._revealed(PaymentStatus.of(attempt, self._clock.now()), attempt["provider_account"])

    async def _revealed(self, status: PaymentStatus, provider_account: str) -> PaymentStatus:
        """The owning customer's status with the payment's ``client_secret`` while its current action
        is one the provider's browser SDK completes (Stripe.js, ``use_stripe_sdk``), read live from
        the provider and kept nowhere: never logged, stored, or shown to anyone else (API.md
        PaymentStatus; docs/decisions/0078). Else, or when the read fails, null: the page polls on."""
        payment_id = status.body["provider_payment_id"]
        if not status.sdk_action or not payment_id:
            return status
        account = self._settings.account(provider_account)
        budget_s = account.call_budget_s if account is not None else None
        status.body["client_secret"] = await self._client.client_secret(provider_account, payment_id, budget_s)
        return status

    async def _detached(self, work: Coroutine[Any, Any, PaymentStatus]) -> PaymentStatus:
        task = asyncio.get_running_loop().create_task(work)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)

    async def drain(self) -> None:
        """Let every detached send finish recording (at shutdown)."""
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _start_and_send(self, attempt: Attempt) -> PaymentStatus:
        account = self._settings.account(attempt["provider_account"])
        if account is None:
            return await self._reload(attempt, "start.account-not-configured")
        opened: list[Opened] = []

        async def open_gate(conn: Connection, started: Attempt, record: dict[str, Any] | None, held: Held) -> None:
            # Seed 001's send gate in the transaction that commits Started (docs/decisions/0031),
            # on the effect record that transaction locked; its EXECUTING row goes with the
            # AUTHORIZATION_ISSUED one that transaction holds.
            # The gate's answer for the record the rows were sent for (mark_started may run this twice).
            opened[:] = [await self._sends.open_in(conn, stored_request(started), started["attempt_id"],
                                                   actor="endpoint", record=record, held=held)]

        try:
            async with self._clock.budget(account.start_budget_s):
                started = await self._attempts.mark_started(attempt, then=open_gate)
        except UNCONFIRMED as error:
            # Unconfirmed: still NotStarted means nothing committed and nobody is about to send.
            log.warning("start_not_confirmed", attempt_id=str(attempt["attempt_id"]), error_type=type(error).__name__)
            return await self._reload(attempt, "start.unconfirmed")
        if started is None:
            return await self._reload(attempt, "start.lost")
        evidence = await self._sends.create_payment(stored_request(started), started["attempt_id"], actor="endpoint",
                                                    budget_s=account.call_budget_s, opened=opened[0])
        # The first try expects the attempt as this transaction left it; a retry reads it as it is.
        expected = [as_started(started)]
        try:
            async with self._clock.budget(account.record_budget_s):
                recorded, extensions = await retry_transaction(
                    lambda: self._record(started["attempt_id"], evidence, expected.pop() if expected else None))
        except UNCONFIRMED as error:
            # The write failed or its commit is unknown; it may have committed, and a notification
            # may have resolved the attempt meanwhile. Report what is durable; recovery finds out.
            log.error("outcome_not_recorded", attempt_id=str(attempt["attempt_id"]), order_id=attempt["order_id"],
                      finding=evidence.finding, reason=evidence.reason, error_type=type(error).__name__)
            return await self._reload(attempt, "record.unconfirmed")
        log.info("payment_sent", attempt_id=str(recorded["attempt_id"]), order_id=recorded["order_id"],
                 state=recorded["state"], finding=evidence.finding, reason=evidence.reason)
        return PaymentStatus.of(recorded, self._clock.now(), extensions)

    async def _record(self, attempt_id: Any, evidence: Evidence,
                      expected: Attempt | None) -> tuple[Attempt, dict[str, Any]]:
        """The send's answer recorded as :meth:`Attempts.record_response` records it (a send_result
        event and the evidence, one transaction; the caller retries it whole), with the answer's
        ``effect`` and ``refund`` read in that transaction and sent with its COMMIT: one round trip
        and one pooled connection fewer than reading them after it. The read is a plain SELECT
        after the writes; should it fail, the transaction fails with it and the caller reloads,
        as for any unconfirmed outcome (recovery finds out what the provider did). With
        ``expected`` the writes go with the attempt's lock and are kept only if the lock answers
        that row (:meth:`Attempts.apply_evidence`): one round trip fewer when nothing moved."""
        async with self._db.transaction() as conn:
            recorded = await self._attempts.apply_evidence(attempt_id, evidence, actor="endpoint", kind="send_result",
                                                           conn=conn, expected=expected)
            extensions = await send_status_extensions(conn, recorded["attempt_id"], recorded["order_id"])
        return recorded, extensions_of(await extensions.fetchone())

    async def _reload(self, attempt: Attempt, why: str) -> PaymentStatus:
        log.info("payment_status_reloaded", attempt_id=str(attempt["attempt_id"]), why=why)
        return PaymentStatus.of(await self._attempts.get(attempt["attempt_id"]), self._clock.now())
