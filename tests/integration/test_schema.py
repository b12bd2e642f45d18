"""The schema rejects what seed 004 says it rejects ("Persisting the Attempt", and the test matrix
lines "A NotStarted row with a first_sent_at or escalation_deadline, a lease missing its token or
acquisition time, an action expiry without an action, or a resolved escalation with a reminder
scheduled is rejected by the database", "A state value outside the allowed set is rejected", "A
notification event with a key but no account is rejected", "Recovery closing a stale NotStarted
attempt as NotApplied (never-sent) commits with both send timestamps empty, and any other
NotApplied without them is rejected"), against a real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO provider_accounts VALUES ('cardco:acct_store:test', 'cardco', 'test', %(now)s)",
            {"now": NOW})
        connection.execute(
            "INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method,"
            " provider_account, state, created_at, updated_at)"
            " VALUES ('ORD-1', 'm', 'c', 4250, 'EUR', 'pm_card_visa', 'cardco:acct_store:test', 'Open', %(now)s, %(now)s)",
            {"now": NOW})
        yield connection


def attempt(conn: psycopg.Connection[Any], **overrides: Any) -> uuid.UUID:
    number = overrides.pop("attempt_number", 1)
    row: dict[str, Any] = {
        "attempt_id": uuid.uuid4(), "order_id": "ORD-1", "customer_id": "c", "attempt_number": number,
        "provider_account": "cardco:acct_store:test", "endpoint": "http://cardco.test/v1/payments",
        "api_version": "2026-11-01", "client_reference": f"ORD-1-a{number}", "idempotency_key": str(uuid.uuid4()),
        "request_body": "{}", "amount_minor": 4250, "currency": "EUR", "state": "NotStarted",
        "created_at": NOW, "next_check_at": NOW + timedelta(seconds=60),
        "first_sent_at": None, "escalation_deadline": None, "outcome_reason": None,
        "recovery_owner": None, "lease_token": None, "lease_acquired_at": None, "lease_expires_at": None,
        "next_action": None, "next_action_expires_at": None,
    }
    row.update(overrides)
    columns = ", ".join(row)
    values = ", ".join(f"%({name})s" for name in row)
    conn.execute(f"INSERT INTO payment_attempts ({columns}) VALUES ({values})", row)
    return row["attempt_id"]


SENT = {"first_sent_at": NOW, "escalation_deadline": NOW + timedelta(hours=23)}


def rejected_by(conn: psycopg.Connection[Any], constraint: str, **overrides: Any) -> None:
    with pytest.raises(psycopg.errors.IntegrityError) as caught:
        attempt(conn, **overrides)
    assert caught.value.diag.constraint_name == constraint


def test_misspelled_state_is_rejected(conn: psycopg.Connection[Any]) -> None:
    """Seed 004: a misspelled state such as Unkown would fall outside the partial unique index."""
    rejected_by(conn, "ck_payment_attempt_state", state="Unkown", **SENT)


@pytest.mark.parametrize("sent", [{"first_sent_at": NOW}, {"escalation_deadline": NOW}, SENT])
def test_not_started_with_send_timestamps_is_rejected(conn: psycopg.Connection[Any], sent: dict[str, Any]) -> None:
    rejected_by(conn, "ck_payment_attempt_send_boundary", **sent)


def test_started_without_send_timestamps_is_rejected(conn: psycopg.Connection[Any]) -> None:
    rejected_by(conn, "ck_payment_attempt_send_boundary", state="Started")


def test_never_sent_not_applied_needs_empty_timestamps_and_any_other_not_applied_needs_them(
        conn: psycopg.Connection[Any]) -> None:
    attempt(conn, state="NotApplied", outcome_reason="never-sent")
    rejected_by(conn, "ck_payment_attempt_send_boundary", attempt_number=2, state="NotApplied",
                outcome_reason="invalid_request")
    rejected_by(conn, "ck_payment_attempt_send_boundary", attempt_number=2, state="NotApplied",
                outcome_reason="never-sent", **SENT)
    attempt(conn, attempt_number=2, state="NotApplied", outcome_reason="invalid_request", **SENT)


@pytest.mark.parametrize("missing", ["lease_token", "lease_acquired_at", "lease_expires_at", "recovery_owner"])
def test_a_lease_missing_any_part_is_rejected(conn: psycopg.Connection[Any], missing: str) -> None:
    lease = {"recovery_owner": "recovery-1", "lease_token": uuid.uuid4(), "lease_acquired_at": NOW,
             "lease_expires_at": NOW + timedelta(seconds=60)}
    lease[missing] = None
    rejected_by(conn, "ck_payment_attempt_lease", **lease)


def test_an_action_expiry_without_an_action_is_rejected_but_an_action_without_expiry_is_allowed(
        conn: psycopg.Connection[Any]) -> None:
    rejected_by(conn, "ck_payment_attempt_action_expiry", state="Started", next_action_expires_at=NOW, **SENT)
    attempt(conn, state="Started", next_action=Jsonb({"type": "redirect_to_url"}), **SENT)


def test_zero_amount_is_rejected(conn: psycopg.Connection[Any]) -> None:
    rejected_by(conn, "ck_payment_amount", amount_minor=0)


def test_one_live_attempt_per_order(conn: psycopg.Connection[Any]) -> None:
    """Seed 004: at most one attempt per order that might still take effect."""
    first = attempt(conn)
    for state, extra in (("NotStarted", {}), ("Started", SENT), ("Unknown", SENT)):
        with pytest.raises(psycopg.errors.UniqueViolation) as caught:
            attempt(conn, attempt_number=2, state=state, **extra)
        assert caught.value.diag.constraint_name == "one_live_attempt_per_order"
    conn.execute("UPDATE payment_attempts SET state = 'NotApplied', outcome_reason = 'never-sent' "
                 "WHERE attempt_id = %s", (first,))
    attempt(conn, attempt_number=2)


def test_the_live_attempt_conflict_predicate_matches_the_partial_index(conn: psycopg.Connection[Any]) -> None:
    """Seed 004 matrix: the ON CONFLICT predicate for the live-attempt insert matches the partial index
    on the PostgreSQL version in use (an arbiter that matched no index would raise instead)."""
    attempt(conn)
    cursor = conn.execute(
        "INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account,"
        " endpoint, api_version, client_reference, idempotency_key, request_body, amount_minor, currency,"
        " state, created_at, next_check_at)"
        " VALUES (gen_random_uuid(), 'ORD-1', 'c', 2, 'cardco:acct_store:test', 'e', 'v', 'ORD-1-a2', 'k2',"
        " '{}', 4250, 'EUR', 'NotStarted', %(now)s, %(now)s)"
        " ON CONFLICT (order_id) WHERE state IN ('NotStarted', 'Started', 'Unknown') DO NOTHING"
        " RETURNING attempt_id", {"now": NOW})
    assert cursor.fetchone() is None


def test_client_reference_and_key_are_unique_per_account_only(conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO provider_accounts VALUES ('cardco:acct_store:live', 'cardco', 'live', %(now)s)",
                 {"now": NOW})
    attempt(conn, idempotency_key="k")
    attempt(conn, attempt_number=2, client_reference="ORD-1-a1", idempotency_key="k",
            provider_account="cardco:acct_store:live", state="Failed", outcome_reason="card_declined", **SENT)
    rejected_by(conn, "uq_payment_attempt_reference", attempt_number=3, client_reference="ORD-1-a1",
                state="Failed", **SENT)


def test_unconfigured_provider_account_is_rejected(conn: psycopg.Connection[Any]) -> None:
    rejected_by(conn, "payment_attempts_provider_account_fkey", provider_account="cardco:acct_stor:test")


def event(conn: psycopg.Connection[Any], **overrides: Any) -> None:
    row = {"attempt_id": None, "occurred_at": NOW, "kind": "notification", "actor": "notification-handler",
           "provider_account": "cardco:acct_store:test", "notification_key": "evt_1", "detail": Jsonb({})}
    row.update(overrides)
    conn.execute("INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account,"
                 " notification_key, detail) VALUES (%(attempt_id)s, %(occurred_at)s, %(kind)s, %(actor)s,"
                 " %(provider_account)s, %(notification_key)s, %(detail)s)", row)


def test_notification_event_with_a_key_but_no_account_is_rejected(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        event(conn, provider_account=None)
    assert caught.value.diag.constraint_name == "ck_notification_event_fields"


def test_only_notifications_carry_account_and_key(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        event(conn, kind="transition")
    with pytest.raises(psycopg.errors.CheckViolation):
        event(conn, kind="bogus", provider_account=None, notification_key=None)


def test_keyed_notifications_deduplicate_and_unkeyed_ones_never_do(conn: psycopg.Connection[Any]) -> None:
    """Seed 004: deliberately not NULLS NOT DISTINCT, so unkeyed notifications are distinct deliveries."""
    event(conn)
    with pytest.raises(psycopg.errors.UniqueViolation):
        event(conn)
    event(conn, notification_key=None)
    event(conn, notification_key=None)
    count = conn.execute("SELECT count(*) FROM payment_attempt_events WHERE notification_key IS NULL").fetchone()
    assert count == (2,)


@pytest.mark.parametrize("statement", [
    "UPDATE payment_attempt_events SET actor = 'someone-else'",
    "DELETE FROM payment_attempt_events",
    # CASCADE: a plain TRUNCATE is already refused by notification_applications' foreign key,
    # before the trigger is reached; with CASCADE the trigger must refuse it.
    "TRUNCATE payment_attempt_events CASCADE",
])
def test_the_event_history_is_append_only(conn: psycopg.Connection[Any], statement: str) -> None:
    """Seed 004, "Event History": append-only is a requirement to enforce."""
    event(conn)
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        conn.execute(statement)
    assert conn.execute("SELECT count(*) FROM payment_attempt_events").fetchone() == (1,)


def escalation(conn: psycopg.Connection[Any], **overrides: Any) -> None:
    row = {"escalation_key": "attempt:x:deadline", "reason": "deadline", "raised_at": NOW,
           "resolved_at": None, "next_reminder_at": None, "acknowledged_at": None}
    row.update(overrides)
    conn.execute("INSERT INTO payment_escalations (escalation_key, reason, raised_at, resolved_at,"
                 " next_reminder_at, acknowledged_at) VALUES (%(escalation_key)s, %(reason)s, %(raised_at)s,"
                 " %(resolved_at)s, %(next_reminder_at)s, %(acknowledged_at)s)", row)


def test_a_resolved_escalation_with_a_reminder_scheduled_is_rejected(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        escalation(conn, resolved_at=NOW, next_reminder_at=NOW)
    assert caught.value.diag.constraint_name == "ck_escalation_resolved_reminder"


def test_escalation_times_cannot_precede_raising(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        escalation(conn, resolved_at=NOW - timedelta(seconds=1))
    with pytest.raises(psycopg.errors.CheckViolation):
        escalation(conn, acknowledged_at=NOW - timedelta(seconds=1))


def test_one_open_episode_per_key_and_a_new_one_after_resolution(conn: psycopg.Connection[Any]) -> None:
    escalation(conn)
    with pytest.raises(psycopg.errors.UniqueViolation):
        escalation(conn)
    conn.execute("UPDATE payment_escalations SET resolved_at = %(now)s", {"now": NOW})
    escalation(conn)


def test_an_outbox_row_cannot_be_both_dispatched_and_dead(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        conn.execute("INSERT INTO outbox_messages (dedup_key, kind, payload, created_at, next_attempt_at,"
                     " dispatched_at, dead_lettered_at) VALUES ('k', 'operator-alert', '{}', %(now)s, %(now)s,"
                     " %(now)s, %(now)s)", {"now": NOW})
    assert caught.value.diag.constraint_name == "ck_outbox_single_terminal_state"

