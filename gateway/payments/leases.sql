-- Recovery leases on payment attempts (seed 004, "The Recovery Loop" definitions). Claims and
-- finishes are not state changes: they never touch version. :now is the injected clock's, read
-- fresh for each statement.

-- name: claim_due
-- The next due attempts, claimed in one statement (docs/decisions/0033): the rows the due query
-- would list, locked with SKIP LOCKED so concurrent workers take different attempts instead of
-- listing the same ones and losing claims to each other, then leased. A fresh lease token for
-- every claim: a release must present it, so a worker whose lease expired and was reclaimed cannot
-- clear the new owner's lease. Rows another worker is claiming at this moment are skipped, not
-- waited for; a scope paused since the last claim is left alone.
WITH next AS (
    SELECT a.attempt_id
      FROM payment_attempts a
     WHERE a.state IN ('NotStarted', 'Started', 'Unknown')
       AND a.next_check_at <= %(now)s
       AND (a.recovery_owner IS NULL OR a.lease_expires_at <= %(now)s)
       AND NOT EXISTS (SELECT 1 FROM provider_pauses p
                        WHERE p.scope = a.provider_account AND p.paused_until > %(now)s)
       -- At most one pass per attempt in a sweep: the ones this sweep already passed over.
       AND a.attempt_id <> ALL(%(passed)s::uuid[])
       -- Nor the accounts whose lookup tokens this sweep found spent (docs/decisions/0042).
       AND a.provider_account <> ALL(%(spent)s::text[])
       -- One named attempt (a pass over it alone), or any.
       AND (%(attempt_id)s::uuid IS NULL OR a.attempt_id = %(attempt_id)s::uuid)
     ORDER BY a.next_check_at, a.created_at, a.attempt_id
     LIMIT %(limit)s
       FOR NO KEY UPDATE OF a SKIP LOCKED
)
UPDATE payment_attempts a
   SET recovery_owner = %(owner)s, lease_token = gen_random_uuid(), lease_acquired_at = %(now)s,
       lease_expires_at = %(lease_expires_at)s
  FROM next
 WHERE a.attempt_id = next.attempt_id
RETURNING a.*,
       (SELECT count(*) FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id AND e.kind = 'lookup') AS passes,
       (SELECT e.kind FROM payment_attempt_events e
         WHERE e.attempt_id = a.attempt_id AND e.kind IN ('send_intent', 'send_result', 'send_abandoned')
         ORDER BY e.event_id DESC LIMIT 1) AS last_send_event;

-- name: finish
-- Schedule the next check and release the lease in one conditional write; a stale worker
-- cannot clear another worker's lease. A crashed worker's lease simply expires.
UPDATE payment_attempts
   SET next_check_at = %(next_check_at)s,
       recovery_owner = NULL, lease_token = NULL, lease_acquired_at = NULL, lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND recovery_owner = %(owner)s AND lease_token = %(token)s
   AND lease_expires_at > %(now)s
RETURNING attempt_id;

-- name: defer
-- Passes a worker claimed and may not make yet, because their account's lookup tokens are spent
-- (docs/decisions/0042): each lease is released (this owner's, this token's) and nothing else
-- changes. The attempts stay due, in their order, for the next sweep; no lookup event is written,
-- so their backoff does not advance: a deferred lookup is neither "not found" nor a failure.
UPDATE payment_attempts a
   SET recovery_owner = NULL, lease_token = NULL, lease_acquired_at = NULL, lease_expires_at = NULL
  FROM unnest(%(attempt_ids)s::uuid[], %(tokens)s::uuid[]) AS d (attempt_id, lease_token)
 WHERE a.attempt_id = d.attempt_id AND a.recovery_owner = %(owner)s AND a.lease_token = d.lease_token;

-- name: lock_owned
-- Re-read under lock: still live and still this worker's (escalate and finish, close never-sent).
SELECT * FROM payment_attempts
 WHERE attempt_id = %(attempt_id)s AND recovery_owner = %(owner)s AND lease_token = %(token)s
   AND lease_expires_at > %(now)s
   FOR NO KEY UPDATE;

-- name: close_never_sent
-- NotStarted -> NotApplied (never-sent), both send timestamps empty, lease released: conditional
-- on the version read and the lease, so an endpoint that started it first wins.
UPDATE payment_attempts
   SET state = 'NotApplied', outcome_reason = 'never-sent', version = version + 1,
       recovery_owner = NULL, lease_token = NULL, lease_acquired_at = NULL, lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND state = 'NotStarted' AND version = %(version)s
   AND recovery_owner = %(owner)s AND lease_token = %(token)s AND lease_expires_at > %(now)s
RETURNING *;

-- name: commit_intent
-- The recovery send intent: locks the order then the attempt, and requires that the order is
-- still payable, the attempt still sendable, this worker owns the lease, and :now is before the
-- stamped escalation deadline. No row back: confirmed not committed.
WITH payable AS (
    SELECT order_id FROM orders WHERE order_id = %(order_id)s AND state = 'Open' FOR NO KEY UPDATE
), owned AS (
    SELECT a.attempt_id, a.endpoint, a.api_version, a.provider_account
      FROM payment_attempts a JOIN payable USING (order_id)
     WHERE a.attempt_id = %(attempt_id)s AND a.state IN ('Started', 'Unknown')
       AND a.recovery_owner = %(owner)s AND a.lease_token = %(token)s AND a.lease_expires_at > %(now)s
       AND a.escalation_deadline > %(now)s
       FOR NO KEY UPDATE OF a
)
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
SELECT attempt_id, %(now)s, 'send_intent', %(owner)s,
       jsonb_build_object('endpoint', endpoint, 'api_version', api_version,
                          'provider_account', provider_account, 'send', 'resend')
  FROM owned
RETURNING event_id;

-- name: append_event
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
VALUES (%(attempt_id)s, %(now)s, %(kind)s, %(actor)s, %(detail)s);

-- name: order_state
SELECT state FROM orders WHERE order_id = %(order_id)s;
