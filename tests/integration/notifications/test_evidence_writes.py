"""Fewer statements on the ingest path: the evidence writes as one statement whose every
part hangs on the conditional update (docs/decisions/0048), and a payment notification's evidence
locks taken by the statement that records it (docs/decisions/0049).

CardCo only: these are the statements behind every provider's notifications, below the
adapter; the matrix that runs them on Stripe too is test_matching and test_deduplication."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from gateway.domain.attempts import Evidence, decide
from gateway.notifications.repository import _SQL as _NOTIFICATION_SQL
from gateway.payments.attempts import VersionConflict, facts
from gateway.payments.evidence_lock import LOCK_FOR_EVIDENCE
from gateway.services import Services
from gateway.store.db import fetch_one
from tests.conftest import TEST_ACCOUNT
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: see above)
from tests.integration.notifications.conftest import Webhooks, payment_event


async def test_a_write_whose_conditional_update_misses_writes_nothing_and_raises_version_conflict(
        webhooks: Webhooks, services: Services) -> None:
    """Seed 004, "Persisting the Attempt": every write is conditional on the version read under the
    lock, and a miss is retried as a whole. A success decided against a stale version raises
    VersionConflict and leaves, inside the same transaction, no evidence or transition event, the
    order Open, no outbox row and the attempt's open escalation open: nothing a retry would repeat."""
    attempt = await webhooks.attempt()
    now = webhooks.clock.now()
    await services.db.fetch_one(
        "INSERT INTO payment_escalations (escalation_key, attempt_id, reason, details, raised_at, next_reminder_at)"
        " VALUES (%(k)s, %(a)s, 'test', '{}', %(now)s, %(now)s) RETURNING escalation_id",
        {"k": f"attempt:{attempt['attempt_id']}:test", "a": attempt["attempt_id"], "now": now})
    evidence = Evidence(finding="succeeded", provider_account=TEST_ACCOUNT, provider_id="pay_stale",
                        provider_status="succeeded", amount_minor=4250, currency="EUR")
    async with services.db.transaction() as conn:
        locked = await fetch_one(conn, LOCK_FOR_EVIDENCE, {
            "attempt_id": attempt["attempt_id"], "evidence_payment_id": "pay_stale"})
        assert locked is not None
        stale = {**locked, "version": locked["version"] - 1}
        decision = decide(facts(stale), evidence, only_send=True)
        assert decision.new_state == "Succeeded" and decision.resolves
        with pytest.raises(VersionConflict):
            await (await services.attempts._write(conn, stale, decision, evidence, "endpoint", "send_result", now,
                                                  None))()
        written = await fetch_one(conn, """
            SELECT (SELECT count(*) FROM payment_attempt_events
                     WHERE attempt_id = %(a)s AND kind IN ('send_result', 'transition')
                       AND occurred_at = %(now)s) AS events,
                   (SELECT state FROM orders WHERE order_id = %(o)s) AS order_state,
                   (SELECT count(*) FROM outbox_messages WHERE attempt_id = %(a)s) AS outbox,
                   (SELECT count(*) FROM payment_escalations WHERE attempt_id = %(a)s AND resolved_at IS NULL) AS open
            """, {"a": attempt["attempt_id"], "o": attempt["order_id"], "now": now})
    assert written == {"events": 0, "order_state": "Open", "outbox": 0, "open": 1}
    assert (await webhooks.reload(attempt))["state"] == "Started"


async def test_a_matched_notification_waits_for_the_order_lock_in_the_statement_that_records_it(
        webhooks: Webhooks, services: Services) -> None:
    """docs/decisions/0049: identify, record and lock in one statement. While another transaction
    holds the order, the notification waits on the lock inside the statement inserting its record
    (not in a second statement after it), still before anything is applied; once the lock is
    released it applies as usual."""
    attempt = await webhooks.attempt()
    async with await psycopg.AsyncConnection.connect(services.settings.database_url) as holder:
        await holder.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (attempt["order_id"],))
        delivery = asyncio.create_task(webhooks.deliver(payment_event(attempt)))
        waiting = None
        for _ in range(500):  # poll (not a deadline) until the delivery waits on the lock
            waiting = await services.db.fetch_one(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
            if waiting is not None:
                break
            await asyncio.sleep(0.01)
        assert waiting is not None
        # The server shows the statement's first 1024 bytes, its leading comment included.
        assert waiting["query"][:200] == _NOTIFICATION_SQL["identify_and_record"][:200]
        assert (await webhooks.reload(attempt))["state"] == "Started"
        await holder.commit()
    assert (await delivery).status_code == 204
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"


async def test_a_deadlock_in_the_first_application_does_the_whole_delivery_again(
        webhooks: Webhooks, services: Services) -> None:
    """The first application runs under the locks its recording statement took, without a
    savepoint: a deadlock there (another transaction holding the effect record, the last lock,
    and then asking for the attempt: out of the one lock order) rolls back the whole transaction,
    the notification's record with it, and the handler does the delivery again in a new one. Seed
    004: a notification is acknowledged only once recorded and handled; it is recorded once."""
    attempt = await webhooks.attempt()
    async with await psycopg.AsyncConnection.connect(services.settings.database_url) as holder:
        # The delivery waits first, so its deadlock check (after deadlock_timeout) finds the cycle;
        # the holder's own check is left far behind.
        await holder.execute("SET deadlock_timeout = '60s'")
        await holder.execute("SELECT 1 FROM effect_records WHERE attempt_id = %s FOR NO KEY UPDATE",
                             (attempt["attempt_id"],))
        delivery = asyncio.create_task(webhooks.deliver(payment_event(attempt)))
        waiting = None
        for _ in range(1000):  # poll (not a deadline) until the delivery waits on the record's lock
            waiting = await services.db.fetch_one(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
            if waiting is not None:
                break
            await asyncio.sleep(0.01)
        assert waiting is not None and "effect_ledger" in waiting["query"]
        # Out of order: the holder now asks for the attempt the delivery holds; the delivery's
        # transaction is the one PostgreSQL breaks, which frees the attempt for the holder.
        await holder.execute("SELECT 1 FROM payment_attempts WHERE attempt_id = %s FOR NO KEY UPDATE",
                             (attempt["attempt_id"],))
        assert (await webhooks.reload(attempt))["state"] == "Started"
        await holder.commit()
    response = await delivery
    assert response.status_code == 204, response.text
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    recorded = [row for row in await webhooks.notifications() if row["attempt_id"] == attempt["attempt_id"]]
    assert len(recorded) == 1
