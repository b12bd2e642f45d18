"""The statements composed from the attempt-kind registry (gateway.domain.attempt_kinds) answer
exactly what the hand-written ones they replace answered, row for row and label for label, on a
real database holding rows of every kind: the grants gauges (seed 000 section 21, "Grants issued
but never consumed"), the kind of each open escalation, and a reconciliation run's Succeeded
attempts that a listing did not show. Session-local tables shadow the real ones (pg_temp is
searched first), so both statements read the same fixtures of each kind."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from gateway.domain.attempt_kinds import KINDS
from gateway.reconciliation.runs import UNLISTED_SUCCEEDED
from gateway.store.db import Connection, Database, fetch_all
from gateway.store.gauges import OPEN_ESCALATIONS, grant_gauges

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

HAND_GRANTS = """
SELECT 'paygate_payout_grants_expired_unused' AS name, jsonb_build_object('operation', g.operation) AS labels,
       count(x.*)::float8 AS value
  FROM (VALUES ('payout.submit'), ('payout.recall'), ('payment.refund')) AS g (operation)
  LEFT JOIN (SELECT 'payout.submit' AS operation FROM payout_grants WHERE state = 'Expired'
             UNION ALL SELECT 'payout.recall' FROM payout_recall_grants WHERE state = 'Expired'
             UNION ALL SELECT 'payment.refund' FROM payment_refund_grants WHERE state = 'Expired') AS x
    ON x.operation = g.operation
 GROUP BY g.operation
UNION ALL
SELECT 'paygate_payout_grants_due_unclaimed', jsonb_build_object('operation', g.operation), count(x.*)
  FROM (VALUES ('payout.submit'), ('payout.recall'), ('payment.refund')) AS g (operation)
  LEFT JOIN (SELECT 'payout.submit' AS operation FROM payout_grants
              WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s
             UNION ALL SELECT 'payout.recall' FROM payout_recall_grants
              WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s
             UNION ALL SELECT 'payment.refund' FROM payment_refund_grants
              WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s) AS x
    ON x.operation = g.operation
 GROUP BY g.operation"""

HAND_ESCALATIONS = """
SELECT reason,
       CASE WHEN escalation_key LIKE 'payout-recall-%%' THEN 'payout_recall'
            WHEN escalation_key LIKE 'payout-%%' THEN 'payout'
            WHEN escalation_key LIKE 'payment-refund-%%' OR reason LIKE 'payment-refund-%%'
                 OR reason = 'refund-owed' THEN 'payment_refund' END AS kind,
       count(*)::float8 AS open, extract(epoch FROM (%(now)s - min(raised_at)))::float8 AS oldest
  FROM payment_escalations WHERE resolved_at IS NULL GROUP BY 1, 2"""

HAND_UNLISTED = """
SELECT a.kind, a.attempt_id, a.provider_id, a.client_reference, a.amount_minor, a.currency, a.sent_at
  FROM (SELECT 'payment' AS kind, attempt_id, provider_payment_id AS provider_id, client_reference, amount_minor,
               currency, first_sent_at AS sent_at, provider_account, state
          FROM payment_attempts
        UNION ALL
        SELECT 'payout', attempt_id, provider_payout_id, client_reference, amount_minor, currency, started_at,
               provider_account, state
          FROM payout_attempts
        UNION ALL
        SELECT 'payout_recall', attempt_id, provider_recall_id, client_reference, amount_minor, currency, started_at,
               provider_account, state
          FROM payout_recall_attempts
        UNION ALL
        SELECT 'payment_refund', attempt_id, provider_refund_id, client_reference, amount_minor, currency,
               started_at, provider_account, state
          FROM payment_refund_attempts) a
 WHERE a.provider_account = %(provider_account)s AND a.state = 'Succeeded' AND a.kind = ANY(%(kinds)s)
   AND a.sent_at >= %(window_from)s AND a.sent_at < %(before)s
   AND NOT EXISTS (SELECT 1 FROM reconciliation_findings f
                    WHERE f.run_id = %(run_id)s AND f.kind = a.kind
                      AND f.provider_object_id = COALESCE(a.provider_id, a.client_reference))
 ORDER BY a.sent_at, a.attempt_id"""

GRANTS = {"payout_grants": "payout.submit", "payout_recall_grants": "payout.recall",
          "payment_refund_grants": "payment.refund"}
ATTEMPTS = {"payment_attempts": ("provider_payment_id", "first_sent_at"),
            "payout_attempts": ("provider_payout_id", "started_at"),
            "payout_recall_attempts": ("provider_recall_id", "started_at"),
            "payment_refund_attempts": ("provider_refund_id", "started_at")}
ESCALATIONS = [  # (key, reason, open): every key form the raisers use, and episodes of no kind
    ("payout-attempt:a1:deadline", "deadline", True), ("payout-grant:g1:expired", "grant-expired", True),
    ("payout-recall-attempt:r1:deadline", "deadline", True), ("payout-recall-grant:g2:expired", "grant-expired", True),
    ("payment-refund-attempt:f1:deadline", "deadline", True), ("order:o1:refund-owed", "refund-owed", True),
    ("order:o2:refund", "payment-refund-unconfirmed", True), ("attempt:p1:deadline", "deadline", True),
    ("outbox:m1:dead", "outbox-dead-letter", True), ("payout-attempt:a2:deadline", "deadline", False)]


async def _fixtures(conn: Connection, run_id: uuid.UUID) -> None:
    for table, operation in GRANTS.items():
        await conn.execute(f"CREATE TEMP TABLE {table} (operation text, state text, not_before timestamptz,"
                           " expires_at timestamptz) ON COMMIT DROP")
        for state, offset in (("Expired", -2), ("Expired", -3), ("Issued", -1), ("Issued", 1), ("Consumed", -1)):
            await conn.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", (
                operation, state, NOW + timedelta(hours=offset), NOW + timedelta(hours=offset + 2)))
    await conn.execute("CREATE TEMP TABLE payment_escalations (escalation_key text, reason text,"
                       " raised_at timestamptz, resolved_at timestamptz) ON COMMIT DROP")
    for index, (key, reason, is_open) in enumerate(ESCALATIONS):
        await conn.execute("INSERT INTO payment_escalations VALUES (%s, %s, %s, %s)", (
            key, reason, NOW - timedelta(minutes=index + 1), None if is_open else NOW))
    await conn.execute("CREATE TEMP TABLE reconciliation_findings (run_id uuid, kind text,"
                       " provider_object_id text) ON COMMIT DROP")
    for number, (table, (provider_id, sent_at)) in enumerate(ATTEMPTS.items()):
        await conn.execute(f"CREATE TEMP TABLE {table} (attempt_id uuid, {provider_id} text, client_reference text,"
                           f" amount_minor bigint, currency text, {sent_at} timestamptz, provider_account text,"
                           " state text) ON COMMIT DROP")
        for index, state in enumerate(("Succeeded", "Succeeded", "Succeeded", "Failed")):
            object_id = f"{table}-{index}" if index != 1 else None
            await conn.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", (
                uuid.uuid4(), object_id, f"ref-{table}-{index}", 100 * index + number, "EUR",
                NOW - timedelta(minutes=10 * index + number + 1), "acct-test", state))
        # The listing showed the third one: found already, not missing.
        await conn.execute("INSERT INTO reconciliation_findings VALUES (%s, %s, %s)",
                           (run_id, table.removesuffix("_attempts"), f"{table}-2"))


async def test_the_composed_statements_answer_as_the_hand_written_ones(db: Database) -> None:
    run_id = uuid.uuid4()
    listed = {"run_id": run_id, "provider_account": "acct-test", "window_from": NOW - timedelta(hours=1),
              "before": NOW, "kinds": [kind.name for kind in KINDS]}
    async with db.transaction() as conn:
        await _fixtures(conn, run_id)
        grants = await fetch_all(conn, grant_gauges(KINDS), {"now": NOW})
        assert sorted(grants, key=str) == sorted(await fetch_all(conn, HAND_GRANTS, {"now": NOW}), key=str)
        assert {(row["name"], row["labels"]["operation"], row["value"]) for row in grants} >= {
            ("paygate_payout_grants_expired_unused", "payout.recall", 2.0),
            ("paygate_payout_grants_due_unclaimed", "payment.refund", 1.0)}
        escalations = await fetch_all(conn, OPEN_ESCALATIONS, {"now": NOW})
        assert sorted(escalations, key=str) == sorted(await fetch_all(conn, HAND_ESCALATIONS, {"now": NOW}), key=str)
        assert {row["kind"] for row in escalations} == {"payout", "payout_recall", "payment_refund", None}
        unlisted = await fetch_all(conn, UNLISTED_SUCCEEDED, listed)
        assert unlisted == await fetch_all(conn, HAND_UNLISTED, listed)
        assert sorted(row["kind"] for row in unlisted) == sorted(2 * [kind.name for kind in KINDS])
