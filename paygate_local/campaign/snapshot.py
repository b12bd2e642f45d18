"""What the invariants are checked against, read once after the settle: CardCo's ledger, request
log and webhook deliveries (its control API), the merchant and alert sinks' messages, the outbox
rows the workers logged as dead-lettered, and the gateway's rows (read-only SQL on its database),
into one :class:`paygate_local.campaign.invariants.Snapshot`. Also the settle's own question: what is
still moving?
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from paygate_local.campaign.invariants import Snapshot

QUERIES = {
    "orders": "SELECT order_id, state FROM orders",
    # intent_at: when the attempt's send intent was written (a checkout's first send_intent event;
    # a payout's, recall's or refund's Started write), compared with CardCo's receive times.
    "payment_attempts": """
        SELECT attempt_id, order_id, provider_account, client_reference, state, escalation_deadline,
               lease_expires_at, amount_minor, currency, idempotency_key,
               (SELECT min(e.occurred_at) FROM payment_attempt_events e
                 WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS intent_at
          FROM payment_attempts a""",
    "payouts": "SELECT payout_id, state, amount_minor, currency FROM payouts",
    "payout_attempts": """
        SELECT attempt_id, payout_id, provider_account, client_reference, state, escalation_deadline,
               CASE WHEN state IN ('Claimed', 'Started') THEN lease_expires_at END AS lease_expires_at,
               amount_minor, currency, idempotency_key, started_at AS intent_at
          FROM payout_attempts""",
    "recall_attempts": """
        SELECT attempt_id, payout_id, provider_account, client_reference, state, escalation_deadline,
               CASE WHEN state IN ('Claimed', 'Started') THEN lease_expires_at END AS lease_expires_at,
               amount_minor, currency, idempotency_key, started_at AS intent_at
          FROM payout_recall_attempts""",
    "refund_attempts": """
        SELECT attempt_id, order_id, provider_account, client_reference, state, escalation_deadline,
               CASE WHEN state IN ('Claimed', 'Started') THEN lease_expires_at END AS lease_expires_at,
               amount_minor, currency, idempotency_key, started_at AS intent_at
          FROM payment_refund_attempts""",
    "grants": "SELECT payout_id AS owner, state, expires_at FROM payout_grants",
    "refund_grants": "SELECT order_id AS owner, state, expires_at FROM payment_refund_grants",
    "escalations": "SELECT escalation_key, attempt_id, reason, details, resolved_at FROM payment_escalations",
    "notifications": """
        SELECT e.event_id, e.provider_account, e.notification_key, e.attempt_id, e.detail,
               (a.notification_event_id IS NOT NULL) AS applied_later
          FROM payment_attempt_events e
          LEFT JOIN notification_applications a ON a.notification_event_id = e.event_id
         WHERE e.kind = 'notification'""",
    "effects": """
        SELECT r.attempt_id, l.rows, l.last_sequence, l.states, c.certificate, c.key_id, c.signature
          FROM effect_records r
          LEFT JOIN effect_certificates c USING (attempt_id)
          CROSS JOIN LATERAL (SELECT count(*) AS rows, max(sequence) AS last_sequence,
                                     array_agg(to_state ORDER BY sequence) AS states
                                FROM effect_ledger e WHERE e.attempt_id = r.attempt_id) l""",
    "outbox": """
        SELECT message_id, dedup_key, ordering_key, kind, dispatched_at, dead_lettered_at, next_attempt_at
          FROM outbox_messages""",
}

# Still moving: work that is due or in flight, which the settle waits for (bounded by its deadline).
# Fresh operator alerts do not count: reminders for open escalations keep adding them.
MOVING = """
SELECT (SELECT count(*) FROM payment_attempts
         WHERE state = 'NotStarted'
            OR (state IN ('Started', 'Unknown') AND (escalation_deadline > %(now)s OR NOT EXISTS (
                  SELECT 1 FROM payment_escalations e
                   WHERE e.attempt_id = payment_attempts.attempt_id AND e.resolved_at IS NULL))))
         AS "payment attempts unresolved",
       (SELECT count(*) FROM payout_attempts WHERE state IN ('Claimed', 'Started')
            OR (state = 'Unknown' AND escalation_deadline > %(now)s)) AS "payout attempts unresolved",
       (SELECT count(*) FROM payout_recall_attempts WHERE state IN ('Claimed', 'Started')
            OR (state = 'Unknown' AND escalation_deadline > %(now)s)) AS "recall attempts unresolved",
       (SELECT count(*) FROM payment_refund_attempts WHERE state IN ('Claimed', 'Started')
            OR (state = 'Unknown' AND escalation_deadline > %(now)s)) AS "refund attempts unresolved",
       (SELECT count(*) FROM payouts p WHERE state = 'Approved' AND EXISTS (
            SELECT 1 FROM payout_grants g WHERE g.payout_id = p.payout_id AND g.state = 'Issued'
               AND g.expires_at > %(now)s)) AS "payouts with a live grant",
       (SELECT count(*) FROM outbox_messages WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL
           AND (ordering_key IS NOT NULL OR created_at < %(now)s - interval '5 seconds'))
         AS "outbox rows undelivered"
"""


def moving(database_url: str) -> dict[str, int]:
    """What is still on its way somewhere: attempts, payouts and outbox rows, by what they are
    (only the kinds with any)."""
    with psycopg.connect(database_url, connect_timeout=5, row_factory=dict_row) as conn:
        row = conn.execute(MOVING, {"now": datetime.now(UTC)}).fetchone() or {}
    return {what: int(n) for what, n in row.items() if n}


def logged_dead_letters(logs: Path) -> frozenset[int]:
    """The outbox message ids the processes logged as dead-lettered (``outbox_dead_lettered``,
    JSON lines in ``logs/*.log``): where an operator alert goes when its own sink fails."""
    found = set()
    for path in sorted(logs.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if "outbox_dead_lettered" not in line or "{" not in line:
                continue
            try:
                entry = json.loads(line[line.index("{"):])
            except ValueError:
                continue
            if entry.get("event") == "outbox_dead_lettered" and isinstance(entry.get("message_id"), int):
                found.add(entry["message_id"])
    return frozenset(found)


async def pending_webhooks(http: httpx.AsyncClient, control_url: str) -> int:
    """Deliveries CardCo still means to make, apart from reordered ones held for the account's next
    event (up to a minute): the invariants judge only what was delivered."""
    deliveries = (await http.get(f"{control_url}/webhooks")).json()["deliveries"]
    return sum(1 for d in deliveries if d["state"] == "pending" and not d["held_for_reorder"])


async def read(http: httpx.AsyncClient, document: dict[str, Any], database_url: str, logs: Path,
               cancelled: dict[str, datetime], windows_open: dict[str, datetime]) -> Snapshot:
    control_url = document["control_url"]
    ledger = (await http.get(f"{control_url}/ledger")).json()
    requests = (await http.get(f"{control_url}/requests")).json()["requests"]
    deliveries = (await http.get(f"{control_url}/webhooks")).json()["deliveries"]
    rows: dict[str, Any] = {}
    with psycopg.connect(database_url, row_factory=dict_row, connect_timeout=5) as conn:
        now = datetime.now(UTC)
        for name, sql in QUERIES.items():
            rows[name] = conn.execute(sql).fetchall()
    # The sinks after the rows: a row is marked dispatched only after its sink answered, so every
    # dispatched row read above is at its sink now (reminders keep being dispatched after the settle).
    sink = (await http.get(document["merchant_sink_url"])).json()["messages"]
    keys = (await http.get(f"{document['gateway_url']}/v1/keys/certificates")).json()["keys"]
    alerts = (await http.get(document["alert_sink_url"])).json()["messages"]
    return Snapshot(now=now, ledger_payments=ledger["payments"], ledger_payouts=ledger["payouts"],
                    ledger_refunds=ledger["refunds"], ledger_recalls=ledger["recalls"], requests=requests,
                    deliveries=deliveries, sink=sink, alerts=alerts, logged_dead_letters=logged_dead_letters(logs),
                    cancelled_orders=frozenset(cancelled), cancellations_committed=cancelled,
                    payout_windows_open=windows_open,
                    certificate_keys={key["key_id"]: base64.b64decode(key["public_key"]) for key in keys}, **rows)
