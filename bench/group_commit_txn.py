"""The database's side of grouping notifications into one transaction (docs/decisions/0073).

    python bench/group_commit_txn.py [--duration 10] [--clients 16] [--batch 8] [--json PATH]

pgbench, on an embedded PostgreSQL with Started attempts prepared as bench/notifications.py does,
runs the notification transaction's statements (bench/pgbench_scripts.py ``notification``) three
ways with the same clients, and prints notifications per second for each:
- **single**: one notification per transaction (the ceiling's own script);
- **savepoints**: ``--batch`` notifications per transaction, each the same two statements inside
  its own savepoint (what gateway/store/group_commit.py sends; each notification's statements are
  read before the next, as the handler reads them);
- **set-based**: ``--batch`` notifications per transaction in two statements, one recording all
  of them and taking their locks (identify_and_record over a set), one applying all their evidence
  (write_evidence over a set).
Each batch is ``--batch`` consecutive attempts starting at a multiple of ``--batch``, so the locks
of two batches are either disjoint or taken in the same order.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pgbench_scripts  # noqa: E402
from bench.notifications import prepare_attempts  # noqa: E402
from bench.support import embedded_database, pgbench, progress  # noqa: E402

ATTEMPTS = 10_000

_SET_BASED = """\\set b random(0, :attempts / :batch - 1)
BEGIN;
WITH series AS (
    SELECT g, 'PGB-' || g || '-a1' AS reference, 'pay_pgb_' || g AS payment_id
      FROM generate_series(CAST(:b AS int) * :batch + 1, CAST(:b AS int) * :batch + :batch) g
), found AS (
    SELECT series.g,
           (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = :account AND client_reference = series.reference) AS by_reference,
           (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = :account AND provider_payment_id = series.payment_id) AS by_payment_id
      FROM series
), recorded AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account, notification_key,
                                        detail)
    SELECT COALESCE(by_reference, by_payment_id), now(), 'notification', 'notification-handler', :account,
           'evt_pgb_' || txid_current() || '_' || g, '{"type": "payment.succeeded", "status": "succeeded"}'::jsonb
      FROM found ORDER BY g
    ON CONFLICT (provider_account, notification_key) DO NOTHING
    RETURNING event_id, attempt_id
), locked_order AS MATERIALIZED (
    SELECT o.order_id, o.state AS order_state FROM orders o
     WHERE o.order_id IN (SELECT a.order_id FROM payment_attempts a JOIN recorded USING (attempt_id))
     ORDER BY o.order_id
       FOR NO KEY UPDATE
), locked AS (
    SELECT a.attempt_id, a.version, locked_order.order_state,
           (SELECT count(*) FROM payment_attempt_events e
             WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS send_intents
      FROM payment_attempts a JOIN locked_order USING (order_id)
     WHERE a.attempt_id IN (SELECT attempt_id FROM recorded)
       FOR NO KEY UPDATE OF a
)
SELECT count(*) FROM locked;
WITH applied AS (
    UPDATE payment_attempts SET provider_status = 'succeeded', version = version + 1
     WHERE provider_account = :account
       AND client_reference IN (
           SELECT 'PGB-' || g || '-a1'
             FROM generate_series(CAST(:b AS int) * :batch + 1, CAST(:b AS int) * :batch + :batch) g)
    RETURNING *
), events AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT applied.attempt_id, now(), 'transition', 'notification-handler',
           '{"from": "Started", "to": "Started"}'::jsonb
      FROM applied
), settled AS (
    UPDATE orders o SET updated_at = now(), version = o.version + 1
      FROM applied WHERE o.order_id = applied.order_id AND o.state IN ('Open', 'CancelRequested')
), queued AS (
    INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
    SELECT 'pgb:' || txid_current() || ':' || applied.attempt_id, applied.attempt_id,
           'attempt:' || applied.attempt_id, 'order-confirmation', '{}'::jsonb, now(), now()
      FROM applied
    ON CONFLICT (dedup_key) DO NOTHING
), resolved AS (
    UPDATE payment_escalations SET resolved_at = now(), next_reminder_at = NULL
     WHERE attempt_id IN (SELECT attempt_id FROM applied) AND resolved_at IS NULL
)
SELECT count(*) FROM applied;
COMMIT;
"""


def savepoints_script(batch: int) -> str:
    """The generated single-notification script (bench/pgbench_scripts.py) with ``batch`` units
    between its BEGIN and COMMIT, each its own walk's next row, in its own savepoint."""
    text = pgbench_scripts.script("notification")
    body = text[text.index("BEGIN;") + len("BEGIN;"):text.rindex("COMMIT;")].strip()
    units, sets = [], []
    for index in range(batch):
        sets.append(f"\\set n{index} 1 + :client_id + :clients * ((:turn * {batch} + {index}) % (:rows / :clients))")
        # Each unit its own notification key and outbox key: the generated ones end in txid_current().
        unit = re.sub(r":n\b", f":n{index}", body).replace("txid_current()", f"(txid_current() || '_{index}')")
        units.append(f"SAVEPOINT unit_{index};\n{unit}\nRELEASE SAVEPOINT unit_{index};")
    return "\\set turn :turn + 1\n" + "\n".join(sets) + "\nBEGIN;\n" + "\n".join(units) + "\nCOMMIT;\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with embedded_database() as (url, work):
        prepare_attempts(url, "PGB-", ATTEMPTS, with_payment_id=True)
        scripts = {"single": pgbench_scripts.write("notification", work), "savepoints": work / "savepoints.sql",
                   "set-based": work / "set_based.sql"}
        scripts["savepoints"].write_text(savepoints_script(args.batch))
        scripts["set-based"].write_text(_SET_BASED)
        variables = {**pgbench_scripts.variables(ATTEMPTS, args.clients), "attempts": ATTEMPTS,
                     "batch": args.batch}
        for name, script in scripts.items():
            progress(f"pgbench, {name}")
            tps = pgbench(url, script, args.clients, args.duration, variables)
            figures[name] = tps * (1 if name == "single" else args.batch)
    print(f"\nnotifications/s in PostgreSQL, pgbench, {args.clients} clients, {args.duration} s each, "
          f"batches of {args.batch}\n")
    for name, rate in figures.items():
        print(f"  {name:<11} {rate:>9.0f}/s   {rate / figures['single']:.2f}x single")
    if args.json:
        args.json.write_text(json.dumps({"clients": args.clients, "batch": args.batch, "rates": figures}, indent=1)
                             + "\n")


if __name__ == "__main__":
    main()
