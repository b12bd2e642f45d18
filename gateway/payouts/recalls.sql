-- Payout recall (docs/decisions/0015; seed 000 section 17): its own decisions, grants and
-- attempts. Every attempt write is conditional on the state it expects and the owner's lease
-- epoch, exactly as a payout attempt's: the shared statements are in gateway/pipeline/rows.sql.

-- name: ensure_recall_row
INSERT INTO payout_recalls (payout_id, created_at, updated_at) VALUES (%(payout_id)s, %(now)s, %(now)s)
ON CONFLICT (payout_id) DO NOTHING;

-- name: lock_recall_row
-- Recall numbers are allocated under this lock, never by the worker.
SELECT * FROM payout_recalls WHERE payout_id = %(payout_id)s FOR UPDATE;

-- name: allocate_recall
UPDATE payout_recalls SET recalls_allocated = recalls_allocated + 1, updated_at = %(now)s
 WHERE payout_id = %(payout_id)s
RETURNING recalls_allocated;

-- name: paid_attempt
-- The attempt that paid: the recall links to it by its provider payout id.
SELECT attempt_id, provider_payout_id, provider_status FROM payout_attempts
 WHERE payout_id = %(payout_id)s AND state = 'Succeeded'
 ORDER BY attempt_number DESC LIMIT 1;

-- name: paid_account
-- The account the recalled payout was paid on, through the decision's paid attempt: the recall is
-- sent there, never to whichever account the configuration lists first.
SELECT a.provider_account FROM payout_recall_decisions d JOIN payout_attempts a ON a.attempt_id = d.paid_attempt_id
 WHERE d.decision_id = %(decision_id)s;

-- name: recall_policy
SELECT current_version FROM policy_releases WHERE operation = 'payout.recall';

-- name: expire_lapsed_grants_of_payout
UPDATE payout_recall_grants
   SET state = 'Expired', expired_at = %(now)s
 WHERE payout_id = %(payout_id)s AND state = 'Issued' AND expires_at <= %(now)s
RETURNING grant_id;

-- name: unresolved
-- A recall attempt Claimed, Started or Unknown, or an Issued grant that may still be claimed.
SELECT 1 FROM payout_recall_attempts WHERE payout_id = %(payout_id)s AND state IN ('Claimed', 'Started', 'Unknown')
UNION ALL
SELECT 1 FROM payout_recall_grants WHERE payout_id = %(payout_id)s AND state = 'Issued';

-- name: recalled
SELECT 1 FROM payout_recall_attempts WHERE payout_id = %(payout_id)s AND state = 'Succeeded';

-- name: insert_decision
INSERT INTO payout_recall_decisions (decision_id, payout_id, outcome, reason, policy_version, actor_id,
                                     evaluated_payout_version, paid_attempt_id, provider_payout_id, observed_at,
                                     correlation_id)
VALUES (%(decision_id)s, %(payout_id)s, %(outcome)s, %(reason)s, %(policy_version)s, %(actor_id)s,
        %(evaluated_payout_version)s, %(paid_attempt_id)s, %(provider_payout_id)s, %(now)s, %(correlation_id)s)
RETURNING *;

-- name: insert_grant
INSERT INTO payout_recall_grants (grant_id, decision_id, payout_id, tenant_id, audience, recall_number,
                                  provider_payout_id, policy_version, not_before, expires_at, state)
VALUES (%(grant_id)s, %(decision_id)s, %(payout_id)s, %(tenant_id)s, %(audience)s, %(recall_number)s,
        %(provider_payout_id)s, %(policy_version)s, %(not_before)s, %(expires_at)s, 'Issued')
RETURNING *;

-- name: insert_attempt
INSERT INTO payout_recall_attempts (attempt_id, payout_id, grant_id, decision_id, recall_number, provider_account,
                                    provider_payout_id, client_reference, idempotency_key, amount_minor, currency,
                                    state, claimed_by, claimed_at, send_deadline, lease_expires_at,
                                    escalation_deadline)
VALUES (%(attempt_id)s, %(payout_id)s, %(grant_id)s, %(decision_id)s, %(recall_number)s, %(provider_account)s,
        %(provider_payout_id)s, %(client_reference)s, %(idempotency_key)s, %(amount_minor)s, %(currency)s,
        'Claimed', %(worker_id)s, %(now)s, %(send_deadline)s, %(lease_expires_at)s, %(escalation_deadline)s)
RETURNING *;

-- name: decisions_of_payout
SELECT * FROM payout_recall_decisions WHERE payout_id = %(payout_id)s ORDER BY position;

-- name: grants_of_payout
SELECT * FROM payout_recall_grants WHERE payout_id = %(payout_id)s ORDER BY recall_number;

-- name: attempts_of_payout
SELECT * FROM payout_recall_attempts WHERE payout_id = %(payout_id)s ORDER BY recall_number;

-- name: effect_evidence
-- A recall attempt's evidence: the payout's ``recall`` events naming it (the history's id columns
-- reference the payout's own tables, so the recall attempt is named in detail).
SELECT event_id FROM payout_history
 WHERE payout_id = (SELECT payout_id FROM payout_recall_attempts WHERE attempt_id = %(attempt_id)s)
   AND kind = 'recall' AND detail->>'recall_attempt_id' = %(attempt_id)s::text
   AND detail->>'event' IN ('provider_observation', 'reconciliation')
 ORDER BY event_id;
