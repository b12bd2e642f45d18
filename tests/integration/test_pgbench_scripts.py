"""The generated ceilings run under pgbench against the real schema and do the product's writes
each time (bench/pgbench_scripts.py): two clients, three transactions each, every one finding its
own prepared row (a statement that finds none would abort its client)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from bench import pgbench_scripts
from bench.notifications import prepare_attempts
from bench.recovery import insert_backlog
from bench.support import insert_orders, pgbench_command

CLIENTS, TRANSACTIONS, ROWS = 2, 3, 4


def run(url: str, name: str, work: Path, rows: int = ROWS) -> None:
    command = pgbench_command(url, pgbench_scripts.write(name, work), CLIENTS, 0,
                              pgbench_scripts.variables(rows, CLIENTS), transactions=TRANSACTIONS)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"number of transactions actually processed: {CLIENTS * TRANSACTIONS}/" in done.stdout, done.stdout
    assert "number of failed transactions: 0 " in done.stdout, done.stdout


def counts(url: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]  # the test's own constants


EVENTS = "SELECT kind, count(*) FROM payment_attempt_events GROUP BY kind ORDER BY kind"
OUTBOX = "SELECT count(*) FROM outbox_messages WHERE kind = 'order-confirmation'"
CERTIFIED = ("SELECT (SELECT count(*) FROM effect_certificates), count(*) FROM effect_ledger l "
             "WHERE to_state = 'CERTIFIED' AND sequence = 8 AND (SELECT array_agg(to_state ORDER BY sequence) "
             "FROM effect_ledger WHERE attempt_id = l.attempt_id) = ARRAY['PROPOSED', 'POLICY_EVALUATED', "
             "'APPROVED', 'INTENT_PERSISTED', 'AUTHORIZATION_ISSUED', 'EXECUTING', 'EFFECT_CONFIRMED', 'CERTIFIED']")


def test_the_checkout_ceiling_pays_an_order_per_transaction(database_url: str, tmp_path: Path) -> None:
    insert_orders(database_url, "PGB-", ROWS)
    run(database_url, "checkout", tmp_path)
    done = CLIENTS * TRANSACTIONS
    assert counts(database_url, "SELECT state, count(*) FROM payment_attempts GROUP BY state") == [("Succeeded", done)]
    assert counts(database_url, EVENTS) == [("send_intent", done), ("send_result", done), ("transition", done)]
    assert counts(database_url, OUTBOX) == [(done,)]
    # Each client walked its own orders: every order was paid, none twice at once.
    assert counts(database_url, "SELECT count(DISTINCT order_id) FROM payment_attempts") == [(ROWS,)]
    # Seed 001: each effect certified, its ledger through CERTIFIED with no gap.
    assert counts(database_url, CERTIFIED) == [(done, done)]


def test_the_notification_ceiling_records_and_applies_a_notification_per_transaction(
        database_url: str, tmp_path: Path) -> None:
    prepare_attempts(database_url, "PGB-", ROWS, with_payment_id=True)
    run(database_url, "notification", tmp_path)
    done = CLIENTS * TRANSACTIONS
    assert counts(database_url, EVENTS) == [("notification", done), ("transition", done)]
    assert counts(database_url, "SELECT count(*) FROM payment_attempt_events WHERE kind = 'notification' "
                                "AND attempt_id IS NOT NULL") == [(done,)]
    assert counts(database_url, OUTBOX) == [(done,)]


def test_the_certified_notification_ceiling_certifies_each_of_its_attempts_once(
        database_url: str, tmp_path: Path) -> None:
    """Seed 001 on the production path: each transaction resolves its own attempt, whose effect
    record the bench made at EXECUTING, and certifies it; no row is used twice (pgbench ``-t``)."""
    prepare_attempts(database_url, "PGC-", CLIENTS * TRANSACTIONS, with_payment_id=True, records="by_sql")
    run(database_url, "notification_certified", tmp_path, rows=CLIENTS * TRANSACTIONS)
    done = CLIENTS * TRANSACTIONS
    assert counts(database_url, EVENTS) == [("notification", done), ("transition", done)]
    assert counts(database_url, "SELECT state, count(*) FROM payment_attempts GROUP BY state") == [("Succeeded", done)]
    assert counts(database_url, OUTBOX) == [(done,)]
    assert counts(database_url, CERTIFIED) == [(done, done)]


def test_the_recovery_ceiling_claims_applies_and_releases_a_lease_per_transaction(
        database_url: str, tmp_path: Path) -> None:
    insert_backlog(database_url, "http://cardco.bench", "PGB-", ROWS)
    run(database_url, "recovery", tmp_path)
    done = CLIENTS * TRANSACTIONS
    assert counts(database_url, "SELECT count(*) FROM payment_attempt_events WHERE kind = 'lookup'") == [(done,)]
    assert counts(database_url, OUTBOX) == [(done,)]
    assert counts(database_url, "SELECT count(*) FROM payment_attempts WHERE recovery_owner IS NOT NULL") == [(0,)]
