-- pgbench: the SQL one recovery pass runs for an Unknown attempt whose lookup by client reference
-- finds a succeeded payment (gateway/payments/leases.sql claim_due, gateway/payments/queries.sql
-- lock_for_evidence and write_evidence, which also releases the lease), on a
-- random prepared attempt PGB-<n> (bench/recovery.py prepares :attempts of them, attempt_id
-- md5('PGB-<n>')). The writes are the real ones except that they leave the attempt Unknown and
-- its order Open (not Succeeded and Paid) and give the confirmation a fresh dedup key, so a
-- reused attempt costs the same next time. The apply is conditional on a version >= 0 instead of
-- the version read (pgbench cannot carry a whole row), and the release on this client's owner
-- (the lease token is not known to pgbench).
-- pgbench substitutes ":name" even inside string literals, so literals avoid colons (chr(58)).
\set n random(1, :attempts)
-- 1. the claim, one autocommit statement (leases.sql claim_due, for this attempt)
WITH next AS (
    SELECT a.attempt_id
      FROM payment_attempts a
     WHERE a.state IN ('NotStarted', 'Started', 'Unknown')
       AND a.next_check_at <= now()
       AND (a.recovery_owner IS NULL OR a.lease_expires_at <= now())
       AND NOT EXISTS (SELECT 1 FROM provider_pauses p
                        WHERE p.scope = a.provider_account AND p.paused_until > now())
       AND a.attempt_id = md5('PGB-' || (:n)::text)::uuid
     LIMIT 1
       FOR NO KEY UPDATE OF a SKIP LOCKED
)
UPDATE payment_attempts a
   SET recovery_owner = 'recovery-pgbench-' || (:client_id)::text, lease_token = gen_random_uuid(),
       lease_acquired_at = now(), lease_expires_at = now() + interval '60 s'
  FROM next
 WHERE a.attempt_id = next.attempt_id
RETURNING a.*,
       (SELECT count(*) FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id AND e.kind = 'lookup') AS passes,
       (SELECT e.kind FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id AND e.kind IN ('send_intent', 'send_result', 'send_abandoned')
         ORDER BY e.event_id DESC LIMIT 1) AS last_send_event;
-- 2. the evidence: order and attempt locks in one statement, then every write in one statement
BEGIN;
WITH locked_order AS MATERIALIZED (
    SELECT o.order_id FROM orders o
     WHERE o.order_id = (SELECT order_id FROM payment_attempts WHERE attempt_id = md5('PGB-' || (:n)::text)::uuid)
       FOR NO KEY UPDATE
)
SELECT a.*,
       (SELECT count(*) FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id AND e.kind = 'send_intent') AS send_intents,
       (SELECT other.attempt_id FROM payment_attempts other
         WHERE other.provider_account = a.provider_account
           AND other.provider_payment_id = 'pay_pgb_' || (:n)::text
           AND other.attempt_id <> a.attempt_id) AS provider_payment_owner
  FROM payment_attempts a JOIN locked_order USING (order_id)
 WHERE a.attempt_id = md5('PGB-' || (:n)::text)::uuid
   FOR NO KEY UPDATE OF a;
WITH applied AS (
    -- gateway/payments/queries.sql write_evidence (docs/decisions/0048): the conditional apply
    -- releasing this worker's lease, the lookup and transition events, the order, the outbox row
    -- and the escalation resolution, in one statement hanging on the update.
    UPDATE payment_attempts
       SET state = 'Unknown', outcome_reason = NULL,
           provider_payment_id = COALESCE(provider_payment_id, 'pay_pgb_' || (:n)::text),
           provider_status = 'succeeded', next_action = NULL, next_action_expires_at = NULL,
           next_check_at = COALESCE(NULL, next_check_at),
           recovery_owner = CASE WHEN lease_ours THEN NULL ELSE recovery_owner END,
           lease_token = CASE WHEN lease_ours THEN NULL ELSE lease_token END,
           lease_acquired_at = CASE WHEN lease_ours THEN NULL ELSE lease_acquired_at END,
           lease_expires_at = CASE WHEN lease_ours THEN NULL ELSE lease_expires_at END,
           version = version + 1
      FROM (SELECT COALESCE(recovery_owner = 'recovery-pgbench-' || (:client_id)::text
                            AND lease_token IS NOT NULL, false) AS lease_ours
              FROM payment_attempts WHERE attempt_id = md5('PGB-' || (:n)::text)::uuid) lease
     WHERE attempt_id = md5('PGB-' || (:n)::text)::uuid AND version >= 0
    RETURNING payment_attempts.*
), events AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT applied.attempt_id, now(), e.kind, 'recovery-pgbench', e.detail
      FROM applied, (VALUES
          (1, 'lookup', jsonb_build_object('finding', 'succeeded', 'provider_account', (:account)::text,
                                           'provider_payment_id', 'pay_pgb_' || (:n)::text,
                                           'provider_status', 'succeeded', 'amount_minor', 4250,
                                           'currency', 'EUR', 'decision', 'Succeeded', 'lookup', 'recovery')),
          (2, 'transition', '{"from": "Unknown", "to": "Succeeded", "reason": null}'::jsonb)) AS e (n, kind, detail)
     ORDER BY e.n
), settled AS (
    UPDATE orders o SET state = 'Open', updated_at = now(), version = o.version + 1
      FROM applied WHERE o.order_id = applied.order_id AND o.state IN ('Open', 'CancelRequested')
), queued AS (
    INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
    SELECT concat_ws(chr(58), 'attempt', a.attempt_id, 'order-confirmation', gen_random_uuid()), a.attempt_id,
           concat_ws(chr(58), 'attempt', a.attempt_id), 'order-confirmation',
           jsonb_build_object('order_id', a.order_id, 'attempt_id', a.attempt_id, 'customer_id', a.customer_id,
                              'amount_minor', a.amount_minor, 'currency', a.currency,
                              'provider_payment_id', a.provider_payment_id, 'client_reference', a.client_reference,
                              'dedup_key', concat_ws(chr(58), 'attempt', a.attempt_id, 'order-confirmation'),
                              'kind', 'order-confirmation'),
           now(), now()
      FROM applied a
    ON CONFLICT (dedup_key) DO NOTHING
), resolved AS (
    UPDATE payment_escalations
       SET resolved_at = now(), next_reminder_at = NULL, resolution_note = 'attempt Succeeded'
     WHERE attempt_id = (SELECT attempt_id FROM applied) AND resolved_at IS NULL
)
SELECT attempt_id FROM applied;
COMMIT;
