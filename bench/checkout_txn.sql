-- pgbench: the three checkout transactions of seed 004's PayAsync, with the statements the
-- gateway runs (gateway/payments/queries.sql), on a random pre-created Open order per run
-- (bench/checkout.py creates :orders of them; a rare reuse only makes that run cheaper).
-- pgbench substitutes ":name" even inside string literals, so literals avoid colons (chr(58)).
\set n random(1, :orders)
-- 1. lock the order, find no live attempt, insert attempt N+1
BEGIN;
SELECT * FROM orders WHERE order_id = 'PGB-' || (:n)::text FOR NO KEY UPDATE;
SELECT * FROM payment_attempts WHERE order_id = 'PGB-' || (:n)::text AND state IN ('NotStarted', 'Started', 'Unknown');
SELECT COALESCE(max(attempt_number), 0) + 1 AS attempt_number FROM payment_attempts WHERE order_id = 'PGB-' || (:n)::text;
INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account, endpoint,
                              api_version, client_reference, idempotency_key, request_body, amount_minor,
                              currency, state, created_at, next_check_at)
SELECT gen_random_uuid(), order_id, customer_id,
       (SELECT COALESCE(max(attempt_number), 0) + 1 FROM payment_attempts WHERE order_id = 'PGB-' || (:n)::text),
       provider_account, 'http://cardco.bench/v1/payments', '2026-11-01', gen_random_uuid()::text,
       gen_random_uuid()::text, '{}', amount_minor, currency, 'NotStarted', now(), now() + interval '60 s'
  FROM orders WHERE order_id = 'PGB-' || (:n)::text
ON CONFLICT (order_id) WHERE state IN ('NotStarted', 'Started', 'Unknown') DO NOTHING;
COMMIT;
-- 2. NotStarted -> Started with its send_intent, under the order lock
BEGIN;
WITH payable AS (
    SELECT order_id FROM orders WHERE order_id = 'PGB-' || (:n)::text FOR NO KEY UPDATE
), started AS (
    UPDATE payment_attempts a
       SET state = 'Started', first_sent_at = now(), escalation_deadline = now() + interval '23 hours',
           next_check_at = now() + interval '30 s', version = a.version + 1
      FROM payable
     WHERE a.order_id = payable.order_id AND a.state = 'NotStarted'
    RETURNING a.*
), intent AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT attempt_id, now(), 'send_intent', 'endpoint',
           jsonb_build_object('endpoint', endpoint, 'api_version', api_version, 'provider_account', provider_account)
      FROM started
    RETURNING event_id
)
SELECT started.attempt_id, (SELECT event_id FROM intent) FROM started;
COMMIT;
-- 3. record the outcome: the order and attempt locks in one statement, the send_result and every
--    write in one (gateway/payments/queries.sql lock_for_evidence and write_evidence,
--    docs/decisions/0048): conditional update, events, order (back to Open rather than Paid: the
--    same write, and a reused order costs the same next time), outbox, escalations resolved
BEGIN;
-- (an order another client just took has no Started attempt: the row of NULLs makes the writes miss,
-- as the gateway's conditional update would)
WITH locked_order AS MATERIALIZED (
    SELECT o.order_id FROM orders o WHERE o.order_id = 'PGB-' || (:n)::text FOR NO KEY UPDATE
), locked AS (
    SELECT a.attempt_id, a.version,
           (SELECT count(*) FROM payment_attempt_events e
             WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS send_intents,
           (SELECT other.attempt_id FROM payment_attempts other
             WHERE other.provider_account = a.provider_account
               AND other.provider_payment_id = 'pay_pgb_' || (:n)::text
               AND other.attempt_id <> a.attempt_id) AS provider_payment_owner
      FROM payment_attempts a JOIN locked_order USING (order_id)
     WHERE a.state = 'Started'
       FOR NO KEY UPDATE OF a
)
SELECT locked.* FROM (VALUES (1)) AS one (n) LEFT JOIN locked ON true \gset
WITH applied AS (
    UPDATE payment_attempts
       SET state = 'Succeeded', provider_payment_id = COALESCE(provider_payment_id, 'pay_' || attempt_id),
           provider_status = 'succeeded', version = version + 1
     WHERE attempt_id = NULLIF(:attempt_id, '')::uuid AND version = NULLIF(:version, '')::int
    RETURNING *
), events AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT applied.attempt_id, now(), e.kind, 'endpoint', e.detail
      FROM applied, (VALUES (1, 'send_result', '{"finding": "succeeded"}'::jsonb),
                            (2, 'transition', '{"from": "Started", "to": "Succeeded"}'::jsonb)) AS e (n, kind, detail)
     ORDER BY e.n
), settled AS (
    UPDATE orders o SET state = 'Open', updated_at = now(), version = o.version + 1
      FROM applied WHERE o.order_id = applied.order_id AND o.state IN ('Open', 'CancelRequested')
), queued AS (
    INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
    SELECT concat_ws(chr(58), 'attempt', attempt_id, 'order-confirmation'), attempt_id,
           concat_ws(chr(58), 'attempt', attempt_id), 'order-confirmation', '{}', now(), now()
      FROM applied
    ON CONFLICT (dedup_key) DO NOTHING
), resolved AS (
    UPDATE payment_escalations SET resolved_at = now(), next_reminder_at = NULL
     WHERE attempt_id = (SELECT attempt_id FROM applied) AND resolved_at IS NULL
)
SELECT attempt_id FROM applied;
COMMIT;
