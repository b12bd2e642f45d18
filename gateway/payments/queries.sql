-- The payment attempt aggregate (seed 004, "Persisting the Attempt" and "The Checkout Endpoint").
-- One lock order everywhere: the order row, then the attempt row, then escalations, events and
-- outbox rows. Row locks are FOR NO KEY UPDATE so they never block the FOR KEY SHARE locks that
-- inserting events or outbox rows (foreign keys to the attempt) take.

-- name: lock_order
SELECT * FROM orders WHERE order_id = %(order_id)s FOR NO KEY UPDATE;

-- name: lock_order_for_checkout
-- The checkout's first step in one round trip: the order under its lock, whether it has a live
-- attempt, and the number the next attempt would get (read under the same lock, so no other
-- cooperating writer can take it).
SELECT o.*,
       (SELECT a.attempt_id FROM payment_attempts a
         WHERE a.order_id = o.order_id AND a.state IN ('NotStarted', 'Started', 'Unknown')) AS live_attempt_id,
       (SELECT COALESCE(max(a.attempt_number), 0) + 1 FROM payment_attempts a
         WHERE a.order_id = o.order_id) AS next_attempt_number
  FROM orders o
 WHERE o.order_id = %(order_id)s
   FOR NO KEY UPDATE OF o;

-- name: lock_for_evidence
-- The order row, then the attempt row, in one round trip: the MATERIALIZED CTE locks the order
-- first, and the outer FOR NO KEY UPDATE OF a locks the attempt only for the row the join
-- produced, which needs the locked order row. Also returned: how many send intents the attempt
-- has (a no-effect rejection closes it only after its only send), which other attempt, if any,
-- already owns the evidence's provider payment ID (recording it again would make it name two),
-- and the order's state under its lock (a success on a cancelled order is settled differently).
-- The send intents are counted over the attempt's own history (FILTER, not WHERE): a WHERE on
-- kind lets a generic plan made on stale statistics also read the Overview's partial index of every
-- recent send intent and transition (tests/integration/notifications/test_evidence_writes.py).
-- A template: gateway/payments/evidence_lock.py binds the attempt's id, the attempt_id parameter
-- for Attempts.apply_evidence, or, inside gateway/notifications/queries.sql identify_and_record
-- (docs/decisions/0049), the attempt that statement just recorded a payment notification for.
WITH locked_order AS MATERIALIZED (
    SELECT o.order_id, o.state AS order_state FROM orders o
     WHERE o.order_id = (SELECT order_id FROM payment_attempts WHERE attempt_id = {attempt_id})
       FOR NO KEY UPDATE
)
SELECT a.*, locked_order.order_state,
       (SELECT count(*) FILTER (WHERE e.kind = 'send_intent') FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id) AS send_intents,
       (SELECT other.attempt_id FROM payment_attempts other
         WHERE other.provider_account = a.provider_account
           AND other.provider_payment_id = %(evidence_payment_id)s
           AND other.attempt_id <> a.attempt_id) AS provider_payment_owner
  FROM payment_attempts a JOIN locked_order USING (order_id)
 WHERE a.attempt_id = {attempt_id}
   FOR NO KEY UPDATE OF a

-- name: get
SELECT * FROM payment_attempts WHERE attempt_id = %(attempt_id)s;

-- name: live_for_order
SELECT * FROM payment_attempts
 WHERE order_id = %(order_id)s AND state IN ('NotStarted', 'Started', 'Unknown');

-- name: latest_for_order
SELECT * FROM payment_attempts WHERE order_id = %(order_id)s ORDER BY attempt_number DESC LIMIT 1;

-- name: succeeded_for_order
SELECT * FROM payment_attempts WHERE order_id = %(order_id)s AND state = 'Succeeded'
 ORDER BY attempt_number DESC LIMIT 1;

-- name: insert
-- Callers hold the order lock, so they never collide here; the conflict target is for writers
-- that skipped it. Its predicate must stay textually identical to one_live_attempt_per_order's,
-- and no row back means another live attempt won: reload it with a new statement (this one did
-- not abort the transaction, unlike a plain insert that violated the index would have). The
-- attempt's effect record and its ledger up to INTENT_PERSISTED (seed 001: the record commits
-- with the attempt that makes it sendable; `record_*` as effects/queries.sql insert_record takes
-- them) are written by this statement only if it inserted the attempt, so its COMMIT can go with
-- it: an attempt that lost the index leaves nothing to roll back. `record_inserted` false (a
-- record already stored for the attempt or under its key) is compared and escalated after.
WITH attempt AS (
    INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account, endpoint,
                                  api_version, client_reference, idempotency_key, request_body, amount_minor,
                                  currency, state, created_at, next_check_at)
    VALUES (%(attempt_id)s, %(order_id)s, %(customer_id)s, %(attempt_number)s, %(provider_account)s, %(endpoint)s,
            %(api_version)s, %(client_reference)s, %(idempotency_key)s, %(request_body)s, %(amount_minor)s,
            %(currency)s, 'NotStarted', %(now)s, %(next_check_at)s)
    ON CONFLICT (order_id) WHERE state IN ('NotStarted', 'Started', 'Unknown') DO NOTHING
    RETURNING *
), record AS (
    INSERT INTO effect_records (attempt_id, attempt_kind, rail, provider_account, idempotency_key, effect_digest,
                                policy_digest, approval_set_digest, manifest, created_at)
    SELECT attempt.attempt_id, %(record_attempt_kind)s, %(record_rail)s, %(record_provider_account)s,
           %(record_idempotency_key)s, %(record_effect_digest)s, %(record_policy_digest)s,
           %(record_approval_set_digest)s, %(record_manifest)s, %(record_now)s
      FROM attempt
    ON CONFLICT DO NOTHING
    RETURNING attempt_id, effect_digest, idempotency_key
), ledger AS (
{ledger_of_record}
)
SELECT attempt.*, EXISTS (SELECT FROM record) AS record_inserted FROM attempt;

-- name: mark_started
-- NotStarted -> Started, conditional on the version read, only while the order is still Open
-- (re-checked under the order lock, so a committed cancellation prevents the send), stamping
-- first_sent_at and the escalation deadline from the account configuration in force now, and
-- appending the send_intent in the same statement: exactly one caller wins, and no intent exists
-- without the transition. The order CTE is joined, so its lock is taken before the attempt's.
-- The attempt's effect record is locked by the same statement once the attempt started (the last
-- lock taken: it reads `started`), and read as it stood (its kind, digest, key and last ledger
-- row, effects/queries.sql lock_record's fields, `record_`-prefixed). The ledger rows the caller
-- computed from the record it expects (`entries`, as append_ledger takes them) are appended only
-- if the record is exactly that one (`expected_sequence`, `expected_state`, `expected_digest`,
-- `expected_key`; NULLs expect nothing). Expecting a record, the statement also expects the
-- attempt's stored request to be the one those rows were computed from (`provider_account`,
-- `endpoint`, `api_version`, `idempotency_key`, `request_body`) and every row appended; anything
-- else refuses the statement (`paygate_refuse`), so its transaction commits nothing and its
-- answer may be read after its COMMIT (Attempts.mark_started).
WITH payable AS (
    SELECT order_id FROM orders
     WHERE order_id = %(order_id)s AND state = 'Open'
       FOR NO KEY UPDATE
), started AS (
    UPDATE payment_attempts a
       SET state = 'Started', first_sent_at = %(now)s, escalation_deadline = %(escalation_deadline)s,
           next_check_at = %(next_check_at)s, version = a.version + 1
      FROM payable
     WHERE a.attempt_id = %(attempt_id)s AND a.order_id = payable.order_id
       AND a.state = 'NotStarted' AND a.version = %(version)s
    RETURNING a.*
), intent AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT attempt_id, %(now)s, 'send_intent', %(actor)s,
           jsonb_build_object('endpoint', endpoint, 'api_version', api_version,
                              'provider_account', provider_account, 'send', 'first')
      FROM started
    RETURNING event_id
), record AS (
    SELECT r.attempt_id, r.attempt_kind, r.effect_digest, r.idempotency_key, l.sequence, l.to_state AS protocol_state
      FROM effect_records r
      LEFT JOIN LATERAL (SELECT sequence, to_state FROM effect_ledger e
                          WHERE e.attempt_id = r.attempt_id ORDER BY sequence DESC LIMIT 1) l ON true
     WHERE r.attempt_id = (SELECT attempt_id FROM started)
       FOR NO KEY UPDATE OF r
), ledger AS (
{ledger_of_record}
     WHERE record.sequence = %(expected_sequence)s AND record.protocol_state = %(expected_state)s
       AND record.effect_digest = %(expected_digest)s AND record.idempotency_key = %(expected_key)s
    RETURNING 1
)
SELECT started.*, (SELECT event_id FROM intent) AS intent_event_id,
       record.attempt_id AS record_attempt_id, record.attempt_kind AS record_attempt_kind,
       record.effect_digest AS record_effect_digest, record.idempotency_key AS record_idempotency_key,
       record.sequence AS record_sequence, record.protocol_state AS record_protocol_state,
       CASE WHEN %(expected_key)s::text IS NULL
              OR ((SELECT count(*) FROM ledger) = jsonb_array_length(%(entries)s::jsonb)
                  AND started.provider_account = %(provider_account)s AND started.endpoint = %(endpoint)s
                  AND started.api_version = %(api_version)s AND started.idempotency_key = %(idempotency_key)s
                  AND started.request_body = %(request_body)s)
            THEN true
            ELSE paygate_refuse('mark_started: the effect record or the stored request is not the one expected')
       END AS as_expected
  FROM started LEFT JOIN record ON true;

-- name: write_evidence
-- Every write a decision implies, one statement (docs/decisions/0048; Attempts._write says which
-- parameter switches which part). Conditional on the version read under the lock: a miss returns
-- no row and, since every other part reads `applied`, writes nothing; the caller retries. The
-- provider status goes with a recorded state, NULL included. The lease (leases.sql `finish`) is
-- released in the same update, only while it is still this worker's.
WITH applied AS (
    UPDATE payment_attempts
       SET state = %(state)s,
           outcome_reason = %(outcome_reason)s,
           provider_payment_id = COALESCE(provider_payment_id, %(provider_payment_id)s),
           provider_status = CASE WHEN %(set_provider_status)s THEN %(provider_status)s ELSE provider_status END,
           next_action = CASE WHEN %(store_action)s THEN %(next_action)s
                              WHEN %(clear_action)s THEN NULL ELSE next_action END,
           next_action_expires_at = CASE WHEN %(store_action)s THEN %(next_action_expires_at)s
                                         WHEN %(clear_action)s THEN NULL ELSE next_action_expires_at END,
           next_check_at = CASE WHEN lease_ours AND %(lease_mode)s = 'finish' THEN %(lease_next_check_at)s
                                ELSE COALESCE(%(next_check_at)s, next_check_at) END,
           recovery_owner = CASE WHEN lease_ours THEN NULL ELSE recovery_owner END,
           lease_token = CASE WHEN lease_ours THEN NULL ELSE lease_token END,
           lease_acquired_at = CASE WHEN lease_ours THEN NULL ELSE lease_acquired_at END,
           lease_expires_at = CASE WHEN lease_ours THEN NULL ELSE lease_expires_at END,
           version = version + 1
      FROM (SELECT COALESCE(recovery_owner = %(lease_owner)s AND lease_token = %(lease_token)s
                            AND (%(lease_mode)s = 'release' OR lease_expires_at > %(now)s), false) AS lease_ours
              FROM payment_attempts WHERE attempt_id = %(attempt_id)s) lease
     WHERE attempt_id = %(attempt_id)s AND version = %(version)s
    RETURNING payment_attempts.*
), events AS (
    INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
    SELECT applied.attempt_id, %(now)s, e.kind, %(actor)s, e.detail
      FROM applied, (VALUES (1, %(evidence_kind)s::text, %(evidence_detail)s::jsonb),
                            (2, 'transition', %(transition)s::jsonb)) AS e (n, kind, detail)
     WHERE e.kind IS NOT NULL AND e.detail IS NOT NULL
     ORDER BY e.n
), settled AS (
    -- Paid or PaidAfterCancel with the success (0020); a cancellation completes with a failure.
    UPDATE orders o
       SET state = CASE WHEN %(cancel_order)s THEN 'Cancelled' ELSE %(order_state)s END,
           updated_at = %(now)s, version = o.version + 1
      FROM applied
     WHERE o.order_id = applied.order_id
       AND ((%(order_state)s::text IS NOT NULL AND o.state IN ('Open', 'CancelRequested'))
            OR (%(cancel_order)s AND o.state = 'CancelRequested'))
), queued AS (
    -- outbox `enqueue`, one row per payload (each names its dedup key and kind), in order.
    INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
    SELECT q.payload ->> 'dedup_key', applied.attempt_id, %(ordering_key)s, q.payload ->> 'kind', q.payload,
           %(now)s, %(now)s
      FROM applied, jsonb_array_elements(%(outbox)s::jsonb) WITH ORDINALITY AS q (payload, n)
     ORDER BY q.n
    ON CONFLICT (dedup_key) DO NOTHING
), resolved AS (
    -- escalations `resolve_for_attempt`.
    UPDATE payment_escalations
       SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
     WHERE attempt_id = (SELECT attempt_id FROM applied) AND %(resolves)s AND resolved_at IS NULL
)
SELECT * FROM applied;

-- name: append_event
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
VALUES (%(attempt_id)s, %(now)s, %(kind)s, %(actor)s, %(detail)s)
RETURNING event_id;

-- name: order_cancel_completed
-- A cancellation requested while an attempt was live completes when that attempt ends unpaid.
UPDATE orders SET state = 'Cancelled', updated_at = %(now)s, version = version + 1
 WHERE order_id = %(order_id)s AND state = 'CancelRequested';

-- name: effect_evidence
-- A checkout effect's evidence: the send results, notifications and lookups recorded for it,
-- including those its confirming transaction has just appended.
SELECT event_id FROM payment_attempt_events
 WHERE attempt_id = %(attempt_id)s AND kind IN ('send_result', 'notification', 'lookup')
 ORDER BY event_id;
