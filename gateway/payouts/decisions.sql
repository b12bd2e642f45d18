-- Decisions and grants (seed 000, "Authoritative Context and the Governance Decision" and "Issue
-- Short-Lived Payout Execution Authority"). A decision is written once; a grant's bindings never
-- change, only its state: Issued -> Consumed (the claim), Revoked or Expired.

-- name: insert_decision
INSERT INTO payout_decisions (decision_id, payout_id, operation, outcome, reason, policy_version, terms_fingerprint,
                              actor_id, approval_limit_minor, evaluated_payout_version, tenant_settings_version,
                              beneficiary_version, destination_version, observed_at, correlation_id)
VALUES (%(decision_id)s, %(payout_id)s, %(operation)s, %(outcome)s, %(reason)s, %(policy_version)s,
        %(terms_fingerprint)s, %(actor_id)s, %(approval_limit_minor)s, %(evaluated_payout_version)s,
        %(tenant_settings_version)s, %(beneficiary_version)s, %(destination_version)s, %(now)s, %(correlation_id)s);

-- name: approve_payout
-- Draft (or Approved, for a reauthorization) at the version the decision evaluated, to Approved at
-- the next version, which the grant expects at claim time. The attempt number is allocated here,
-- under the payout row lock, so two concurrent reauthorizations cannot both obtain attempt N.
UPDATE payouts
   SET state = 'Approved', version = version + 1, attempts_allocated = attempts_allocated + 1,
       reserved_for = %(settlement_date)s, updated_at = %(now)s
 WHERE payout_id = %(payout_id)s AND version = %(version)s AND state IN ('Draft', 'Approved')
RETURNING state, version, attempts_allocated;

-- name: insert_grant
INSERT INTO payout_grants (grant_id, decision_id, payout_id, tenant_id, operation, audience, terms_fingerprint,
                           executable_payout_version, attempt_number, policy_version, not_before, expires_at, state)
VALUES (%(grant_id)s, %(decision_id)s, %(payout_id)s, %(tenant_id)s, %(operation)s, %(audience)s,
        %(terms_fingerprint)s, %(executable_payout_version)s, %(attempt_number)s, %(policy_version)s,
        %(not_before)s, %(expires_at)s, 'Issued')
RETURNING *;

-- name: expire_lapsed_grants_of_payout
-- Before a fresh decision: an unused grant past its window is moved to Expired first, so its
-- reservation is released before the new one is made.
UPDATE payout_grants
   SET state = 'Expired', expired_at = %(now)s
 WHERE payout_id = %(payout_id)s AND state = 'Issued' AND expires_at <= %(now)s
RETURNING grant_id, payout_id;

-- name: revoke_grant
UPDATE payout_grants
   SET state = 'Revoked', revoked_at = %(now)s, revoke_reason = %(reason)s
 WHERE grant_id = %(grant_id)s AND state = 'Issued'
RETURNING *;

-- name: get_grant
SELECT * FROM payout_grants WHERE grant_id = %(grant_id)s;

-- name: get_decision
SELECT * FROM payout_decisions WHERE decision_id = %(decision_id)s;

-- name: decisions_of_payout
SELECT * FROM payout_decisions WHERE payout_id = %(payout_id)s ORDER BY position;

-- name: grants_of_payout
SELECT * FROM payout_grants WHERE payout_id = %(payout_id)s ORDER BY attempt_number;

-- name: one_snapshot
-- Worker validation reads the grant, its decision and the payout's context in one snapshot: a
-- claim that commits while a racing worker validates is either wholly seen (grant.consumed) or not
-- at all (that worker's own claim is then lost), never half (a consumed-looking payout beside an
-- Issued grant). The first statement of the transaction.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
