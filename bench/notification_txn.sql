-- pgbench: the statements the gateway's notification transaction runs for a matched
-- payment.succeeded notification (gateway/notifications/queries.sql, gateway/payments/queries.sql),
-- in the same order, against attempts prepared for it (PGB-<n>), staying Started so every
-- transaction does the full work. The ceiling the gateway's throughput is compared with.
-- The account is a -D variable: pgbench would read ":acct_store" inside a literal as a variable.
\set n random(1, :attempts)
BEGIN;
SELECT attempt_id FROM payment_attempts
 WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1';
SELECT attempt_id FROM payment_attempts
 WHERE provider_account = :account AND provider_payment_id = 'pay_pgb_' || CAST(:n AS text);
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account, notification_key, detail)
SELECT attempt_id, now(), 'notification', 'notification-handler', provider_account,
       'evt_pgb_' || txid_current(), '{"type": "payment.succeeded", "status": "succeeded"}'::jsonb
  FROM payment_attempts WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1'
ON CONFLICT (provider_account, notification_key) DO NOTHING RETURNING event_id;
SELECT o.* FROM orders o WHERE o.order_id = 'PGB-' || CAST(:n AS text) FOR NO KEY UPDATE;
SELECT a.version AS v, (SELECT count(*) FROM payment_attempt_events e
                         WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS send_intents
  FROM payment_attempts a
 WHERE a.provider_account = :account AND a.client_reference = 'PGB-' || CAST(:n AS text) || '-a1'
   FOR NO KEY UPDATE OF a \gset
UPDATE payment_attempts SET provider_status = 'succeeded', version = version + 1
 WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1' AND version = :v
RETURNING *;
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
SELECT attempt_id, now(), 'transition', 'notification-handler', '{"from": "Started", "to": "Started"}'::jsonb
  FROM payment_attempts WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1';
INSERT INTO outbox_messages (dedup_key, kind, payload, created_at, next_attempt_at)
VALUES ('pgb:' || txid_current(), 'order-confirmation', '{}'::jsonb, now(), now())
ON CONFLICT (dedup_key) DO NOTHING RETURNING message_id;
UPDATE payment_escalations SET resolved_at = now(), next_reminder_at = NULL
 WHERE attempt_id = (SELECT attempt_id FROM payment_attempts
                      WHERE provider_account = :account AND client_reference = 'PGB-' || CAST(:n AS text) || '-a1')
   AND resolved_at IS NULL
RETURNING escalation_id;
COMMIT;
