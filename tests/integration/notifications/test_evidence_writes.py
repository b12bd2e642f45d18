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
from gateway.domain.certificates import verify
from gateway.effects.certify import Certifier, certificate_of
from gateway.notifications.repository import _SQL as _NOTIFICATION_SQL
from gateway.notifications.repository import IDENTIFY_AND_RECORD
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


async def test_the_evidence_lock_counts_send_intents_from_the_attempts_own_history(
        webhooks: Webhooks, services: Services) -> None:
    """Seed 004, "Persisting the Attempt" (the attempt's send history decides a no-effect
    rejection): the lock every evidence write takes counts the attempt's send intents from its own
    history (payment_attempt_events_history), whatever the planner believes of the table. Counted
    with ``kind = 'send_intent'`` in the WHERE clause, a generic plan made while the events table is
    far larger than its statistics say (a new deployment's first minutes, a burst) also read the
    Overview's partial index (payment_attempt_events_recent): every recent send intent and
    transition of every attempt, 15,266 rows for one notification in a benchmark run (1.6 ms
    against 0.23, the ingest rate 0.62x)."""
    attempt = await webhooks.attempt()
    other = await webhooks.attempt()
    now = webhooks.clock.now()
    async with services.db.transaction() as conn:  # recorded after the table's statistics were taken
        await conn.execute(
            "INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)"
            " SELECT %(a)s, %(now)s, 'transition', 'test', '{}' FROM generate_series(1, 20000)",
            {"a": other["attempt_id"], "now": now})
    for statement in (LOCK_FOR_EVIDENCE, IDENTIFY_AND_RECORD):
        async with services.db.transaction() as conn:
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            plan = await (await conn.execute(psycopg.sql.SQL("EXPLAIN (COSTS OFF) ") + psycopg.sql.SQL(statement), {
                "attempt_id": attempt["attempt_id"], "evidence_payment_id": "pay_plan",
                "provider_account": TEST_ACCOUNT, "client_reference": attempt["client_reference"],
                "provider_payment_id": "pay_plan", "notification_key": "evt_plan", "detail": "{}",
                "conflict_key": "c", "unmatched_key": "u", "now": now})).fetchall()
        lines = "\n".join(row["QUERY PLAN"] for row in plan)
        assert "payment_attempt_events_history" in lines
        assert "payment_attempt_events_recent" not in lines, lines


async def test_a_rejection_closes_the_attempt_only_when_it_answered_its_only_send(
        webhooks: Webhooks, services: Services) -> None:
    """Seed 004 matrix: "A documented validation rejection of an attempt's only send records
    NotApplied with the error"; of one send among several it proves nothing yet (Unknown). Applied
    through the evidence lock, which counts the attempt's send intents among everything its history
    holds (a send result and a notification here): one intent, NotApplied; a second (a resend),
    Unknown."""
    rejected = Evidence(finding="rejected", provider_account=TEST_ACCOUNT, reason="invalid_request")
    only = await webhooks.attempt()
    resent = await webhooks.attempt()
    now = webhooks.clock.now()
    async with services.db.transaction() as conn:  # history besides the send intent, and one resend
        for attempt, kinds in ((only, ("send_result", "lookup")), (resent, ("send_result", "send_intent"))):
            for kind in kinds:
                await conn.execute(
                    "INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)"
                    " VALUES (%(a)s, %(now)s, %(kind)s, 'test', '{}')",
                    {"a": attempt["attempt_id"], "now": now, "kind": kind})
    for attempt, state in ((only, "NotApplied"), (resent, "Unknown")):
        applied = await services.attempts.apply_evidence(attempt["attempt_id"], rejected, actor="test", kind="lookup")
        assert applied["state"] == state


async def test_a_notifications_certificate_names_the_evidence_its_transaction_recorded(
        webhooks: Webhooks, services: Services) -> None:
    """Seed 001: a confirmed effect's certificate names the evidence its confirming transaction
    recorded. A notification's lock on the effect record reads that evidence in the pipeline of its
    writes (Attempts._write), after them: the notification's own event is among it, and the
    certificate reads nothing itself."""
    attempt = await webhooks.attempt()
    assert (await webhooks.deliver(webhooks.payment_event(attempt))).status_code == 204
    async with services.db.transaction() as conn:
        document = await certificate_of(conn, attempt["attempt_id"])
        events = await (await conn.execute(
            "SELECT event_id FROM payment_attempt_events WHERE attempt_id = %(a)s AND kind = 'notification'",
            {"a": attempt["attempt_id"]})).fetchall()
    assert document is not None and events
    assert set(document["certificate"]["evidence_event_ids"]) >= {row["event_id"] for row in events}
    assert verify(document, Certifier.of(services.settings).public_keys())
