-- What an operator reads about payouts and recalls across every tenant (the
-- console's payouts awaiting a person, and payouts and recalls in Unknown). Read-only: nothing
-- here locks or changes a payout. Columns are listed, never `*`: nothing here reads a destination's
-- provider token, and an attempt's destination digest is not an operator's business.

-- name: snapshot
-- One snapshot for a payout and its history, so the history never runs past the state shown.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: payouts
-- A page of the payouts in one state, oldest first by creation, each with its latest attempt (the
-- active one while Executing or Unknown) and its latest decision. With `awaiting`, only those whose
-- latest decision waits for a person (seed 000: AcknowledgmentRequired and EscalationRecommended
-- "stop here, with zero grants"; an acknowledgment or an approval leads to a fresh decision, so a
-- payout submitted again is judged by its newest decision only). Keyset-paged by (created_at,
-- payout_id) in either order (docs/decisions/0036; gateway/store/keyset.py binds {beyond} and
-- {direction}), matching payouts_by_state; the id orders payouts created at one clock instant.
SELECT p.payout_id, p.tenant_id, p.requester_id, p.beneficiary_id, p.destination_id, p.amount_minor, p.currency,
       p.purpose, p.release_at, p.state, p.version, p.created_at, p.updated_at,
       a.attempt_id, a.attempt_number, a.state AS attempt_state, a.client_reference, a.provider_payout_id,
       a.provider_status, a.outcome_reason, a.claimed_at, a.started_at, a.sends, a.checks, a.next_check_at,
       a.escalation_deadline,
       d.decision_id, d.outcome, d.reason, d.policy_version, d.actor_id AS decided_by, d.observed_at AS decided_at
  FROM payouts p
  LEFT JOIN LATERAL (SELECT * FROM payout_attempts
                      WHERE payout_id = p.payout_id ORDER BY attempt_number DESC LIMIT 1) a ON true
  LEFT JOIN LATERAL (SELECT * FROM payout_decisions
                      WHERE payout_id = p.payout_id ORDER BY position DESC LIMIT 1) d ON true
 WHERE p.state = %(state)s
   AND (NOT %(awaiting)s OR d.outcome IN ('AcknowledgmentRequired', 'EscalationRecommended'))
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (p.created_at, p.payout_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::text))
 ORDER BY p.created_at {direction}, p.payout_id {direction}
 LIMIT %(limit)s;

-- name: recalls_in_state
-- A page of recall attempts in one state (docs/decisions/0015) with the recalled payout's tenant,
-- keyset-paged by (claimed_at, attempt_id) in either order (docs/decisions/0036). Recalls are rare,
-- and the recall tables stay twins of the payout tables (test_schema_twins), so no index of its own.
SELECT r.attempt_id, r.payout_id, p.tenant_id, r.recall_number, r.state, r.client_reference, r.provider_payout_id,
       r.provider_recall_id, r.provider_status, r.outcome_reason, r.amount_minor, r.currency, r.claimed_at,
       r.started_at, r.sends, r.checks, r.next_check_at, r.escalation_deadline, r.resolved_at
  FROM payout_recall_attempts r
  JOIN payouts p ON p.payout_id = r.payout_id
 WHERE r.state = %(state)s
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (r.claimed_at, r.attempt_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::uuid))
 ORDER BY r.claimed_at {direction}, r.attempt_id {direction}
 LIMIT %(limit)s;
