-- Effect records, the protocol ledger and certificates (seed 001, "The intent record"). Records
-- and ledger rows are append-only (schema.sql triggers); the protocol state is the ledger's last
-- row. Every ledger writer first locks the record (lock_record), so two writers of one effect
-- append in turn; the unique (attempt_id, sequence) catches any writer that skipped the lock.

-- name: insert_record
-- Re-persisting the same intent is a no-op: the caller then compares the stored key and digest
-- with its own (seed 001: "ON CONFLICT (intent_id) DO NOTHING; assert stored == K, d"). No
-- conflict target: a clash on the account's idempotency key is a different intent under the same
-- identity, and must surface as a mismatch too, never as an aborted transaction. The record's
-- first ledger rows (up to INTENT_PERSISTED; `entries` as in append_ledger) go with it, only if
-- this statement inserted it: one statement for both.
WITH record AS (
    INSERT INTO effect_records (attempt_id, attempt_kind, rail, provider_account, idempotency_key, effect_digest,
                                policy_digest, approval_set_digest, manifest, created_at)
    VALUES (%(attempt_id)s, %(attempt_kind)s, %(rail)s, %(provider_account)s, %(idempotency_key)s, %(effect_digest)s,
            %(policy_digest)s, %(approval_set_digest)s, %(manifest)s, %(now)s)
    ON CONFLICT DO NOTHING
    RETURNING *
), ledger AS (
{ledger_of_record}
)
SELECT * FROM record;

-- name: ledger_of_record
-- A template (gateway/effects/ledger.py with_ledger_of_record): the ledger rows (`entries`, as
-- append_ledger takes them) of the effect record a statement's own `record` CTE holds, appended by
-- that statement, so the record and its rows travel in one round trip. Composed into
-- insert_record here and into gateway/payments/queries.sql insert and mark_started; a statement
-- may follow it with a WHERE that decides whether the rows are appended.
INSERT INTO effect_ledger (attempt_id, sequence, from_state, to_state, effect_digest, idempotency_key,
                           occurred_at, actor, detail)
SELECT record.attempt_id, s.sequence, s.from_state, s.to_state, record.effect_digest, record.idempotency_key,
       {now}, {actor}, s.detail
  FROM record, jsonb_to_recordset({entries}::jsonb) AS s(sequence int, from_state text, to_state text, detail jsonb)

-- name: lock_record
-- The record with its current protocol state. FOR NO KEY UPDATE does not block the FOR KEY SHARE
-- lock that inserting ledger rows (a foreign key to the record) takes. Callers that also lock an
-- attempt lock it first (the attempt's own lock order), so this lock is always the last one taken.
SELECT r.*, l.sequence, l.to_state AS protocol_state
  FROM effect_records r
  LEFT JOIN LATERAL (SELECT sequence, to_state FROM effect_ledger e
                      WHERE e.attempt_id = r.attempt_id ORDER BY sequence DESC LIMIT 1) l ON true
 WHERE r.attempt_id = %(attempt_id)s
   FOR NO KEY UPDATE OF r;

-- name: lock_record_with_evidence
-- lock_record, and the event ids its certificate names as evidence read by the same statement:
-- the placeholder is the confirming area's own query for them (certify.Subject), sent after the
-- writes that append the confirming evidence, so it sees them. A template (ledger.lock_record_with).
SELECT r.*, l.sequence, l.to_state AS protocol_state, ARRAY({evidence}) AS evidence_event_ids
  FROM effect_records r
  LEFT JOIN LATERAL (SELECT sequence, to_state FROM effect_ledger e
                      WHERE e.attempt_id = r.attempt_id ORDER BY sequence DESC LIMIT 1) l ON true
 WHERE r.attempt_id = %(attempt_id)s
   FOR NO KEY UPDATE OF r;

-- name: get_record
-- The record alone, read without a lock (a check before the real, locked one at send time).
SELECT * FROM effect_records WHERE attempt_id = %(attempt_id)s;

-- name: append_ledger
-- Consecutive rows of one effect in one statement (four rows cost one round trip, not four):
-- `entries` is a JSON array of the rows' sequence, from_state, to_state and detail, in order (one
-- jsonb parameter: the driver dumps it once, where four arrays cost it a walk of each element).
INSERT INTO effect_ledger (attempt_id, sequence, from_state, to_state, effect_digest, idempotency_key,
                           occurred_at, actor, detail)
SELECT %(attempt_id)s, s.sequence, s.from_state, s.to_state, %(effect_digest)s, %(idempotency_key)s,
       %(now)s, %(actor)s, s.detail
  FROM jsonb_to_recordset(%(entries)s::jsonb) AS s(sequence int, from_state text, to_state text, detail jsonb);

-- name: effects_of
-- What the APIs show: per attempt, the digest, key and current protocol state.
SELECT r.attempt_id, r.effect_digest, r.idempotency_key, l.to_state AS protocol_state
  FROM effect_records r
  LEFT JOIN LATERAL (SELECT to_state FROM effect_ledger e
                      WHERE e.attempt_id = r.attempt_id ORDER BY sequence DESC LIMIT 1) l ON true
 WHERE r.attempt_id = ANY(%(attempt_ids)s::uuid[]);

-- name: insert_certificate
-- The certificate and its CERTIFIED ledger row together, or neither: a certificate already issued
-- is not rewritten and appends no CERTIFIED row. The rows that bring the record to
-- EFFECT_CONFIRMED (`before`, as append_ledger's `entries`) are appended by the same statement
-- either way. One statement, read by nobody before COMMIT.
WITH before AS (
    INSERT INTO effect_ledger (attempt_id, sequence, from_state, to_state, effect_digest, idempotency_key,
                               occurred_at, actor, detail)
    SELECT %(attempt_id)s, s.sequence, s.from_state, s.to_state, %(effect_digest)s, %(idempotency_key)s,
           %(now)s, %(actor)s, s.detail
      FROM jsonb_to_recordset(%(before)s::jsonb) AS s(sequence int, from_state text, to_state text, detail jsonb)
), certificate AS (
    INSERT INTO effect_certificates (attempt_id, certificate, key_id, signature, issued_at)
    VALUES (%(attempt_id)s, %(certificate)s, %(key_id)s, %(signature)s, %(now)s)
    ON CONFLICT (attempt_id) DO NOTHING
    RETURNING attempt_id
)
INSERT INTO effect_ledger (attempt_id, sequence, from_state, to_state, effect_digest, idempotency_key,
                           occurred_at, actor, detail)
SELECT attempt_id, %(sequence)s, %(from_state)s, %(to_state)s, %(effect_digest)s, %(idempotency_key)s,
       %(now)s, %(actor)s, %(detail)s
  FROM certificate;

-- name: get_certificate
SELECT certificate, key_id, signature FROM effect_certificates WHERE attempt_id = %(attempt_id)s;
