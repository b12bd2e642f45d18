-- Payout attempts (seed 000, "Atomically Claim the Grant and the Payout", "Classify the Outcome",
-- "Reconcile Before Any New Attempt"). Every write is conditional on the state it expects and,
-- for the owning worker, on the lease epoch it holds: the sweeper fences by incrementing it.

-- name: fence_tenant
-- Context fence. FOR SHARE: a concurrent change to a fenced row either committed first (and
-- fails the version check here) or waits until the claim commits. settings_version ignores the
-- daily counters, so other payouts' reservations do not roll this claim back.
SELECT 1 FROM tenants
 WHERE tenant_id = %(tenant_id)s AND settings_version = %(version)s AND NOT payouts_suspended
   FOR SHARE;

-- name: fence_beneficiary
SELECT 1 FROM beneficiaries
 WHERE beneficiary_id = %(beneficiary_id)s AND version = %(version)s AND status = 'Active' AND verified
   FOR SHARE;

-- name: fence_destination
-- Returns the token of exactly the fenced version: the executor holds it in memory only.
SELECT provider_token FROM destinations
 WHERE destination_id = %(destination_id)s AND version = %(version)s
   FOR SHARE;

-- name: fence_policy
SELECT 1 FROM policy_releases
 WHERE operation = 'payout.submit' AND current_version = %(version)s
   FOR SHARE;

-- name: consume_grant
-- Single use: only an Issued grant inside its window, by the one clock's now.
UPDATE payout_grants
   SET state = 'Consumed', consumed_at = %(now)s, consumed_by = %(worker_id)s
 WHERE grant_id = %(grant_id)s AND state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s
RETURNING grant_id;

-- name: claim_payout
UPDATE payouts
   SET state = 'Executing', version = version + 1, active_attempt_id = %(attempt_id)s, updated_at = %(now)s
 WHERE payout_id = %(payout_id)s AND state = 'Approved' AND version = %(version)s
RETURNING version;

-- name: insert_attempt
INSERT INTO payout_attempts (attempt_id, payout_id, grant_id, decision_id, attempt_number, provider_account,
                             client_reference, idempotency_key, amount_minor, currency, destination_id,
                             destination_version, destination_digest, state, claimed_by, claimed_at,
                             send_deadline, lease_expires_at, escalation_deadline)
VALUES (%(attempt_id)s, %(payout_id)s, %(grant_id)s, %(decision_id)s, %(attempt_number)s, %(provider_account)s,
        %(client_reference)s, %(idempotency_key)s, %(amount_minor)s, %(currency)s, %(destination_id)s,
        %(destination_version)s, %(destination_digest)s, 'Claimed', %(worker_id)s, %(now)s,
        %(send_deadline)s, %(lease_expires_at)s, %(escalation_deadline)s)
RETURNING *;

-- name: mark_started
-- Started before the send, conditional on everything that makes Claimed mean "never sent": still
-- Claimed, the epoch this worker holds, its lease unexpired and the send deadline not passed.
UPDATE payout_attempts
   SET state = 'Started', started_at = %(now)s
 WHERE attempt_id = %(attempt_id)s AND state = 'Claimed' AND lease_epoch = %(epoch)s
   AND lease_expires_at > %(now)s AND send_deadline > %(now)s
RETURNING attempt_id;

-- name: count_send
-- Before each send (the first and any bounded resend): the same conditions, re-checked, so no
-- send happens after the deadline or from a worker that lost its lease.
UPDATE payout_attempts
   SET sends = sends + 1
 WHERE attempt_id = %(attempt_id)s AND state = 'Started' AND lease_epoch = %(epoch)s
   AND lease_expires_at > %(now)s AND send_deadline > %(now)s
RETURNING sends;

-- name: resolve_attempt
-- One narrow evidence write: from the states the writer observed, by the owner's epoch when an
-- owner writes (NULL: the sweeper or reconciler, which hold no lease). The lease ends here.
UPDATE payout_attempts
   SET state = %(state)s,
       outcome_reason = %(reason)s,
       provider_payout_id = COALESCE(%(provider_payout_id)s, provider_payout_id),
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
SELECT attempt_id, state, lease_epoch FROM payout_attempts
 WHERE state IN ('Claimed', 'Started') AND lease_expires_at <= %(now)s
 ORDER BY lease_expires_at LIMIT %(limit)s;

-- name: fence_lapsed
-- Takes ownership from a lapsed worker by incrementing the epoch, conditional on the epoch and
-- state read, so the old worker's Started or outcome write can no longer succeed.
UPDATE payout_attempts
   SET lease_epoch = lease_epoch + 1, lease_expires_at = NULL
 WHERE attempt_id = %(attempt_id)s AND state = %(state)s AND lease_epoch = %(epoch)s
   AND lease_expires_at <= %(now)s
RETURNING *;

-- name: due_checks
-- The reconciler's batch: Unknown attempts, and accepted (Started, unowned) ones awaiting a status
-- check, oldest first. Moving next_check_at along the backoff claims them, so a second reconciler
-- does not look up the same attempt in the same round.
UPDATE payout_attempts a
   SET next_check_at = %(now)s + make_interval(
           secs => (%(backoff)s::float8[])[LEAST(a.checks + 1, cardinality(%(backoff)s::float8[]))]),
       checks = a.checks + 1
 WHERE a.attempt_id IN (SELECT attempt_id FROM payout_attempts
                         WHERE state IN ('Started', 'Unknown') AND lease_expires_at IS NULL
                           AND next_check_at <= %(now)s
                         ORDER BY claimed_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING a.*;

-- name: get_attempt
SELECT * FROM payout_attempts WHERE attempt_id = %(attempt_id)s;

-- name: attempt_of_grant
SELECT * FROM payout_attempts WHERE grant_id = %(grant_id)s;

-- name: attempts_of_payout
SELECT * FROM payout_attempts WHERE payout_id = %(payout_id)s ORDER BY attempt_number;

-- name: lock_attempt_by_reference
-- A payout notification names its attempt by the verified account and the client reference the
-- claim generated and sent ('<payout_id>-a<N>'; uq_payout_attempt_reference). FOR UPDATE: the
-- notification decides from the state it read, and the attempt is locked before its payout, the
-- order every resolving writer follows.
SELECT * FROM payout_attempts
 WHERE provider_account = %(provider_account)s AND client_reference = %(client_reference)s
   FOR UPDATE;

-- name: lock_attempt_by_provider_payout_id
-- The same attempt by CardCo's own id, resolved independently: two different answers are an
-- identity conflict, applied to neither (seed 004, "The Notification Handler").
SELECT * FROM payout_attempts
 WHERE provider_account = %(provider_account)s AND provider_payout_id = %(provider_payout_id)s
   FOR UPDATE;

-- name: record_return
-- A completed payout came back (seed 000: "A return is not a rejection"): the attempt stays
-- Succeeded; the condition makes a redelivered return add no second event.
UPDATE payout_attempts
   SET provider_status = 'returned'
 WHERE attempt_id = %(attempt_id)s AND state = 'Succeeded' AND provider_status IS DISTINCT FROM 'returned'
RETURNING provider_payout_id;
