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

-- name: attempts_of_payout
SELECT * FROM payout_attempts WHERE payout_id = %(payout_id)s ORDER BY attempt_number;

-- name: record_return
-- A completed payout came back (seed 000: "A return is not a rejection"): the attempt stays
-- Succeeded; the condition makes a redelivered return add no second event.
UPDATE payout_attempts
   SET provider_status = 'returned'
 WHERE attempt_id = %(attempt_id)s AND state = 'Succeeded' AND provider_status IS DISTINCT FROM 'returned'
RETURNING provider_payout_id;

-- name: effect_evidence
-- A payout effect's evidence: the provider observations and reconciliations recorded for its attempt.
SELECT event_id FROM payout_history
 WHERE attempt_id = %(attempt_id)s AND kind IN ('provider_observation', 'reconciliation')
 ORDER BY event_id;
