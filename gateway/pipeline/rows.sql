-- The statements every attempt kind of the pipeline shares (payout, payout recall; docs/architecture.md
-- "Adding an attempt kind"). Only the tables and the provider-id column differ: {attempts},
-- {grants} and {provider_id} are psycopg.sql.Identifier values bound by gateway/pipeline/rows.py,
-- never text. Every write is conditional on the state it expects
-- and, for the owning worker, on the lease epoch it holds: the sweeper fences by incrementing it.

-- name: consume_grant
-- Single use: only an Issued grant inside its window, by the one clock's now.
UPDATE {grants}
   SET state = 'Consumed', consumed_at = %(now)s, consumed_by = %(worker_id)s
 WHERE grant_id = %(grant_id)s AND state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s
RETURNING grant_id;

-- name: mark_started
-- Started before the send, conditional on everything that makes Claimed mean "never sent": still
-- Claimed, the epoch this worker holds, its lease unexpired and the send deadline not passed.
UPDATE {attempts}
   SET state = 'Started', started_at = %(now)s
 WHERE attempt_id = %(attempt_id)s AND state = 'Claimed' AND lease_epoch = %(epoch)s
   AND lease_expires_at > %(now)s AND send_deadline > %(now)s
RETURNING attempt_id;

-- name: count_send
-- Before each send (the first and any bounded resend): the same conditions, re-checked, so no
-- send happens after the deadline or from a worker that lost its lease.
UPDATE {attempts}
   SET sends = sends + 1
 WHERE attempt_id = %(attempt_id)s AND state = 'Started' AND lease_epoch = %(epoch)s
   AND lease_expires_at > %(now)s AND send_deadline > %(now)s
RETURNING sends;

-- name: resolve_attempt
-- One narrow evidence write: from the states the writer observed, by the owner's epoch when an
-- owner writes (NULL: the sweeper or reconciler, which hold no lease). The lease ends here.
UPDATE {attempts}
   SET state = %(state)s,
       outcome_reason = %(reason)s,
       {provider_id} = COALESCE(%(provider_id)s, {provider_id}),
       provider_status = COALESCE(%(provider_status)s, provider_status),
       resolved_at = CASE WHEN %(state)s IN ('Succeeded', 'Failed', 'NotStarted', 'NotApplied')
                          THEN %(now)s::timestamptz END,
       next_check_at = %(next_check_at)s,
       lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND state = ANY(%(from_states)s::text[])
   AND (%(epoch)s::int IS NULL OR lease_epoch = %(epoch)s::int)
RETURNING *;

-- name: lapsed_leases
-- The sweeper: attempts whose owner's lease lapsed. Each is then fenced by its own conditional write.
SELECT attempt_id, state, lease_epoch FROM {attempts}
 WHERE state IN ('Claimed', 'Started') AND lease_expires_at <= %(now)s
 ORDER BY lease_expires_at LIMIT %(limit)s;

-- name: fence_lapsed
-- Takes ownership from a lapsed worker by incrementing the epoch, conditional on the epoch and
-- state read, so the old worker's Started or outcome write can no longer succeed.
UPDATE {attempts}
   SET lease_epoch = lease_epoch + 1, lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND state = %(state)s AND lease_epoch = %(epoch)s
   AND lease_expires_at <= %(now)s
RETURNING *;

-- name: due_accounts
-- The provider accounts of the reconciler's next batch (the oldest :limit due checks, in
-- due_checks' order) and how many checks each has there: the reconciler takes that many lookup
-- tokens of each account before it claims any (docs/decisions/0042).
SELECT next.provider_account, count(*)::int AS due
  FROM (SELECT provider_account FROM {attempts}
         WHERE state IN ('Started', 'Unknown') AND lease_expires_at IS NULL AND next_check_at <= %(now)s
         ORDER BY claimed_at LIMIT %(limit)s) next
 GROUP BY next.provider_account
 ORDER BY next.provider_account;

-- name: due_checks
-- The reconciler's batch of one provider account: Unknown attempts, and accepted (Started, unowned)
-- ones awaiting a status check, oldest first, as many as it holds lookup tokens for. Moving
-- next_check_at along the backoff claims them, so a second reconciler does not look up the same
-- attempt in the same round.
UPDATE {attempts} a
   SET next_check_at = %(now)s + make_interval(
           secs => (%(backoff)s::float8[])[LEAST(a.checks + 1, cardinality(%(backoff)s::float8[]))]),
       checks = a.checks + 1
 WHERE a.attempt_id IN (SELECT attempt_id FROM {attempts}
                         WHERE state IN ('Started', 'Unknown') AND lease_expires_at IS NULL
                           AND next_check_at <= %(now)s AND provider_account = %(provider_account)s
                         ORDER BY claimed_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING a.*;

-- name: defer_checks
-- Checks the reconciler claimed and did not make because their account answered 429 meanwhile
-- (docs/decisions/0042): due again, with the check not counted, so neither "not found" nor a failed
-- lookup is recorded and the backoff does not advance. Only where nothing moved them since: a
-- notification that resolved one, or another round's claim (checks changed), wins.
UPDATE {attempts} a
   SET next_check_at = %(now)s, checks = a.checks - 1
  FROM unnest(%(attempt_ids)s::uuid[], %(checks)s::int[]) AS d (attempt_id, checks)
 WHERE a.attempt_id = d.attempt_id AND a.checks = d.checks
   AND a.state IN ('Started', 'Unknown') AND a.lease_expires_at IS NULL;

-- name: attempt_of_grant
SELECT * FROM {attempts} WHERE grant_id = %(grant_id)s;

-- name: lock_attempt_by_reference
-- A notification names its attempt by the verified account and the client reference the claim
-- generated and sent (e.g. '<payout_id>-a<N>', '<payout_id>-r<N>'). FOR UPDATE: the notification
-- decides from the state it read, and the attempt is locked before its parent row, the order every
-- resolving writer follows.
SELECT * FROM {attempts}
 WHERE provider_account = %(provider_account)s AND client_reference = %(client_reference)s
   FOR UPDATE;

-- name: lock_attempt_by_provider_id
-- The same attempt by CardCo's own id, resolved independently: two different answers are an
-- identity conflict, applied to neither (seed 004, "The Notification Handler").
SELECT * FROM {attempts}
 WHERE provider_account = %(provider_account)s AND {provider_id} = %(provider_id)s
   FOR UPDATE;

-- name: lock_attempt
-- The reconciler re-reads the attempt under this lock in the transaction that writes what its
-- lookup established (issue 11 item 5): a notification that resolved the attempt during the
-- lookup committed first, and every escalation and resolution is decided from the state seen here.
SELECT * FROM {attempts} WHERE attempt_id = %(attempt_id)s FOR UPDATE;

-- name: get_grant
SELECT * FROM {grants} WHERE grant_id = %(grant_id)s;
