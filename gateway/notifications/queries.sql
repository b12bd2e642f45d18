-- Provider notifications (seed 004, "The Notification Handler", "Notification Deduplication").
-- Every statement runs inside the handler's one transaction; nothing here locks the attempt:
-- Attempts.apply_evidence takes the order and attempt locks, in the one lock order, when it applies.

-- name: identify_and_record
-- A payment notification's first step, one statement (docs/decisions/0031): the attempt named by
-- the client reference (the pair the store generated and sent, which uq_payment_attempt_reference
-- makes unique) and the one named by the provider payment id (one_attempt_per_provider_payment makes
-- it at most one within the account), both in the verified account so a test-mode notification never
-- finds a live attempt; then record_notification's insert with what they found: the attempt both name (or
-- the one named, if only one is), none when they name different attempts (identity conflict, then
-- escalation_key is the conflict key) or none at all (escalation_key is the unmatched key). The
-- handler decides from the same two ids the same way (NotificationHandler._readable). event_id is
-- NULL for a duplicate, with the same waiting as record_notification.
-- Then, only when this statement recorded the notification for one attempt (the handler applies it
-- there next), that attempt is locked for its evidence by gateway/payments/queries.sql
-- lock_for_evidence itself, bound in by gateway/payments/evidence_lock.py (docs/decisions/0049).
-- Its columns follow the three above, all NULL when nothing was locked (a duplicate, a conflict,
-- no match).
WITH found AS (
    SELECT (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = %(provider_account)s AND client_reference = %(client_reference)s)
               AS by_reference,
           (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = %(provider_account)s AND provider_payment_id = %(provider_payment_id)s)
               AS by_payment_id
), placed AS (
    SELECT by_reference, by_payment_id,
           by_reference IS NOT NULL AND by_payment_id IS NOT NULL AND by_reference <> by_payment_id AS conflict
      FROM found
), recorded AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account, notification_key,
                                        detail)
    SELECT CASE WHEN conflict THEN NULL ELSE COALESCE(by_reference, by_payment_id) END, %(now)s, 'notification',
           'notification-handler', %(provider_account)s, %(notification_key)s,
           %(detail)s || jsonb_build_object('escalation_key', CASE
               WHEN conflict THEN %(conflict_key)s
               WHEN COALESCE(by_reference, by_payment_id) IS NULL THEN %(unmatched_key)s END)
      FROM placed
    ON CONFLICT (provider_account, notification_key) DO NOTHING
    RETURNING event_id, attempt_id
), locked AS (
{lock_for_evidence}
)
SELECT found.by_reference, found.by_payment_id, (SELECT event_id FROM recorded) AS event_id, locked.*
  FROM found LEFT JOIN locked ON true;

-- name: record_notification
-- Record before acting. The conflict target names the arbiter, uq_notification, so no other
-- unique constraint can ever silently swallow a notification. If another transaction inserted
-- the same key and has not committed, this waits for it: after its commit this returns no row
-- (a duplicate, handled already); after its rollback this inserts and handles it. A NULL key
-- never conflicts (the constraint is deliberately not NULLS NOT DISTINCT): every unkeyed
-- delivery is its own row and always returns its event id.
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account, notification_key, detail)
VALUES (%(attempt_id)s, %(now)s, 'notification', 'notification-handler', %(provider_account)s,
        %(notification_key)s, %(detail)s)
ON CONFLICT (provider_account, notification_key) DO NOTHING
RETURNING event_id;

-- name: stored_by_event_id
-- The operator names a notification stored without a provider event id by the gateway's id.
SELECT e.event_id, e.attempt_id, e.provider_account, e.notification_key, e.detail,
       a.attempt_id AS applied_to
  FROM payment_attempt_events e
  LEFT JOIN notification_applications a ON a.notification_event_id = e.event_id
 WHERE e.event_id = %(event_id)s AND e.kind = 'notification';

-- name: stored_by_provider_event_id
-- A provider event id is unique only within its account (the same evt_ id may exist under test
-- and live), so it is looked up in the account of the attempt it is to be applied to.
SELECT e.event_id, e.attempt_id, e.provider_account, e.notification_key, e.detail,
       a.attempt_id AS applied_to
  FROM payment_attempt_events e
  LEFT JOIN notification_applications a ON a.notification_event_id = e.event_id
 WHERE e.kind = 'notification' AND e.provider_account = %(provider_account)s
   AND e.notification_key = %(provider_event_id)s;

-- name: attempt_account
SELECT provider_account FROM payment_attempts WHERE attempt_id = %(attempt_id)s;

-- name: record_application
-- The primary key serializes two operators applying the same notification: the second waits
-- for the first and then gets no row back, so the transition is applied once.
INSERT INTO notification_applications (notification_event_id, attempt_id, applied_at, applied_by)
VALUES (%(event_id)s, %(attempt_id)s, %(now)s, %(actor)s)
ON CONFLICT (notification_event_id) DO NOTHING
RETURNING notification_event_id;

-- name: others_behind_escalation
-- A coarse episode (notification:<account>:unmatched-unidentified) stands for every unmatched
-- notification recorded since it was raised; it is closed only when none of them is left unapplied.
SELECT count(*) AS remaining
  FROM payment_attempt_events e
 WHERE e.kind = 'notification' AND e.attempt_id IS NULL
   AND e.provider_account = %(provider_account)s
   AND e.detail ->> 'escalation_key' = %(escalation_key)s
   AND e.event_id <> %(event_id)s
   AND e.occurred_at >= (SELECT raised_at FROM payment_escalations
                          WHERE escalation_key = %(escalation_key)s AND resolved_at IS NULL)
   AND NOT EXISTS (SELECT 1 FROM notification_applications a WHERE a.notification_event_id = e.event_id);

-- name: resolve_episode
-- Reconciliation ended the condition the episode named (the notification now has its attempt),
-- so it closes in the same transaction as the transition; ck_escalation_resolved_reminder
-- insists the reminders stop with it.
UPDATE payment_escalations
   SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
 WHERE escalation_key = %(escalation_key)s AND resolved_at IS NULL
RETURNING escalation_id;

-- name: stored_for_reconciliation
-- The operator's reconciliation queue (API.md: the notifications an operator
-- applies with POST /v1/ops/notifications/<id>/apply): those no attempt took at arrival, which the handler
-- escalated (unmatched, identity conflict, unreadable, another API version), keyset-paged by (occurred_at, event_id) in
-- either order (docs/decisions/0036; payment_attempt_events_awaiting_reconciliation). `state`
-- 'unmatched' keeps those no operator has applied yet, 'applied' those applied, 'all' both. For a
-- readable payment notification, `candidates` names up to three payment attempts of the same
-- account, amount and currency that are still Started or Unknown, newest first: a hint for the
-- operator, who decides; applying still checks everything (NotificationReconciliation).
SELECT e.event_id, e.occurred_at, e.provider_account, e.notification_key, e.detail,
       a.attempt_id AS applied_to, a.applied_at, a.applied_by,
       CASE WHEN e.detail ->> 'object' = 'payment' AND a.attempt_id IS NULL THEN ARRAY(
           SELECT p.attempt_id FROM payment_attempts p
            WHERE p.provider_account = e.provider_account AND p.state IN ('Started', 'Unknown')
              AND p.amount_minor = (e.detail ->> 'amount_minor')::bigint AND p.currency = e.detail ->> 'currency'
            ORDER BY p.created_at DESC, p.attempt_id LIMIT 3)
       END AS candidates
  FROM payment_attempt_events e
  LEFT JOIN notification_applications a ON a.notification_event_id = e.event_id
 WHERE e.kind = 'notification' AND e.attempt_id IS NULL AND (e.detail ->> 'escalation_key') IS NOT NULL
   AND (%(state)s = 'all' OR (%(state)s = 'applied') = (a.attempt_id IS NOT NULL))
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (e.occurred_at, e.event_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::bigint))
 ORDER BY e.occurred_at {direction}, e.event_id {direction}
 LIMIT %(limit)s;
