-- pgbench: the statements the gateway's notification transaction runs for a matched
-- payment.succeeded notification, in the same shape and order (gateway/notifications/queries.sql
-- identify_and_record, which also takes the evidence locks; the handler's savepoint;
-- gateway/payments/queries.sql write_evidence: the conditional update, the transition event, the
-- order, the outbox row and the escalation resolution in one statement), against attempts
-- prepared for it (PGB-<n>), staying Started so every transaction does the full work (the order's
-- update keeps its state). The ceiling the gateway's throughput is compared with.
-- The account is a -D variable: pgbench would read ":acct_store" inside a literal as a variable.
\set n random(1, :attempts)
BEGIN;
WITH found AS (
    SELECT (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1')
               AS by_reference,
           (SELECT attempt_id FROM payment_attempts
             WHERE provider_account = :account AND provider_payment_id = 'pay_pgb_' || CAST(:n AS text))
               AS by_payment_id
), recorded AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account, notification_key,
                                        detail)
    SELECT COALESCE(by_reference, by_payment_id), now(), 'notification', 'notification-handler', :account,
           'evt_pgb_' || txid_current(), '{"type": "payment.succeeded", "status": "succeeded"}'::jsonb
      FROM found
    ON CONFLICT (provider_account, notification_key) DO NOTHING
    RETURNING event_id, attempt_id
), locked_order AS MATERIALIZED (
    SELECT o.order_id, o.state AS order_state FROM orders o
     WHERE o.order_id = (SELECT a.order_id FROM payment_attempts a JOIN recorded USING (attempt_id))
       FOR NO KEY UPDATE
), locked AS (
    SELECT a.*, locked_order.order_state,
           (SELECT count(*) FROM payment_attempt_events e
             WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS send_intents,
           (SELECT other.attempt_id FROM payment_attempts other
             WHERE other.provider_account = a.provider_account
               AND other.provider_payment_id = 'pay_pgb_' || CAST(:n AS text)
               AND other.attempt_id <> a.attempt_id) AS provider_payment_owner
      FROM payment_attempts a JOIN locked_order USING (order_id)
     WHERE a.attempt_id = (SELECT attempt_id FROM recorded)
       FOR NO KEY UPDATE OF a
)
SELECT found.by_reference, (SELECT event_id FROM recorded) AS event_id, locked.version AS v, locked.attempt_id AS a
  FROM found LEFT JOIN locked ON true \gset
SAVEPOINT apply_evidence;
WITH applied AS (
    UPDATE payment_attempts SET provider_status = 'succeeded',
           version = version + 1
     WHERE attempt_id = :a AND version = :v
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
    SELECT 'pgb:' || txid_current(), applied.attempt_id, 'attempt:' || applied.attempt_id, 'order-confirmation',
           '{}'::jsonb, now(), now()
      FROM applied
    ON CONFLICT (dedup_key) DO NOTHING
), resolved AS (
    UPDATE payment_escalations SET resolved_at = now(), next_reminder_at = NULL
     WHERE attempt_id = (SELECT attempt_id FROM applied) AND resolved_at IS NULL
)
SELECT * FROM applied;
RELEASE SAVEPOINT apply_evidence;
COMMIT;
