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
-- The provider's id is recorded by the first evidence that carries it and never replaced (seed
-- 004): evidence naming another id misses (writers compare first and escalate a mismatch; this
-- keeps the rule for one that read the row before another writer recorded an id). An id another
-- attempt of the account holds is refused by the kind's unique index (Rows.resolve translates it).
UPDATE {attempts}
   SET state = %(state)s,
       outcome_reason = %(reason)s,
       {provider_id} = COALESCE({provider_id}, %(provider_id)s),
       provider_status = COALESCE(%(provider_status)s, provider_status),
       resolved_at = CASE WHEN %(state)s IN ('Succeeded', 'Failed', 'NotStarted', 'NotApplied')
                          THEN %(now)s::timestamptz END,
       next_check_at = %(next_check_at)s,
       lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND state = ANY(%(from_states)s::text[])
   AND (%(epoch)s::int IS NULL OR lease_epoch = %(epoch)s::int)
   AND (%(provider_id)s::text IS NULL OR {provider_id} IS NULL OR {provider_id} = %(provider_id)s::text)
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
-- The provider accounts with due checks, each with how many (at most :limit), the account with the
-- oldest due check first (in due_checks' order). Paused accounts are left out, as the checkout
-- recovery claim leaves them (docs/decisions/0008): a 429 pauses only its own account, and its
-- backlog must not take the other accounts' turn (seed 004: "pause the sweep ...
-- other providers and accounts continue"). The reconciler shares its batch among the accounts
-- listed (gateway/domain/lookup_shares.py) and takes each account's share of lookup tokens before it
-- claims any (docs/decisions/0042): an account without tokens claims nothing.
SELECT a.provider_account, LEAST(count(*), %(limit)s)::int AS due
  FROM {attempts} a
 WHERE a.state IN ('Started', 'Unknown') AND a.lease_expires_at IS NULL AND a.next_check_at <= %(now)s
   AND NOT EXISTS (SELECT 1 FROM provider_pauses p
                    WHERE p.scope = a.provider_account AND p.paused_until > %(now)s)
 GROUP BY a.provider_account
 ORDER BY min(a.claimed_at), a.provider_account;

-- name: overdue_unescalated
-- Attempts past their stamped escalation deadline, unresolved and unowned (Unknown, or accepted and
-- awaiting a status check), whose deadline was never escalated (:deadline_key is the kind's
-- deadline escalation key with format()'s placeholder where the attempt id goes): the reconciler
-- escalates them without a lookup, so a paused account or one out of tokens delays no escalation
-- (seed 000: every attempt has an escalation deadline). Any episode, open or
-- resolved, counts: never a second escalation for the same deadline (payment_escalations_by_key).
-- Locked as lock_attempt locks them, skipping those a reconciler or notification holds now; the
-- escalation changes nothing in the attempt row.
SELECT a.* FROM {attempts} a
 WHERE a.state IN ('Started', 'Unknown') AND a.lease_expires_at IS NULL AND a.escalation_deadline <= %(now)s
   AND NOT EXISTS (SELECT 1 FROM payment_escalations e
                    WHERE e.escalation_key = format(%(deadline_key)s, a.attempt_id))
 ORDER BY a.escalation_deadline, a.attempt_id
 LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED;

-- name: due_checks
-- The reconciler's batch of one provider account: Unknown attempts, and accepted (Started, unowned)
-- ones awaiting a status check, oldest first, as many as it holds lookup tokens for. Moving
-- next_check_at along the backoff claims them, so a second reconciler does not look up the same
-- attempt in the same round. Returned oldest first too (an UPDATE's RETURNING keeps no order): the
-- reconciler looks them up in that order and stops at a 429.
WITH claimed AS (
    UPDATE {attempts} a
       SET next_check_at = %(now)s + make_interval(
               secs => (%(backoff)s::float8[])[LEAST(a.checks + 1, cardinality(%(backoff)s::float8[]))]),
           checks = a.checks + 1
     WHERE a.attempt_id IN (SELECT attempt_id FROM {attempts}
                             WHERE state IN ('Started', 'Unknown') AND lease_expires_at IS NULL
                               AND next_check_at <= %(now)s AND provider_account = %(provider_account)s
                             ORDER BY claimed_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING a.*)
SELECT * FROM claimed ORDER BY claimed_at, attempt_id;

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
-- lookup established: a notification that resolved the attempt during the
-- lookup committed first, and every escalation and resolution is decided from the state seen here.
SELECT * FROM {attempts} WHERE attempt_id = %(attempt_id)s FOR UPDATE;

-- name: get_grant
SELECT * FROM {grants} WHERE grant_id = %(grant_id)s;
