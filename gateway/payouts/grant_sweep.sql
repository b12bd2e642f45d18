-- The grants sweep (docs/decisions/0022 and 0023): PostgreSQL, not the broker,
-- knows which payout and recall grants are due. Issued means unclaimed: the atomic claim consumes
-- the grant in the transaction that creates the attempt. Every comparison takes %(now)s.

-- name: due_recall_grants
-- A recall grant whose job should be running now: Issued, inside its window, and its payout still
-- Paid (a payout no longer Paid is the one refusal a message built from the grant itself can meet;
-- a recall's refusals are 'recall' events, so redelivery's due_grants cannot see them). No trailing
-- semicolon: the redelivery sweep embeds it.
SELECT g.grant_id::text AS subject_id, g.not_before AS due_at,
       jsonb_build_object('payout_id', g.payout_id, 'grant_id', g.grant_id::text,
                          'correlation_id', d.correlation_id, 'deliver_at', g.not_before) AS payload
  FROM payout_recall_grants g
  JOIN payout_recall_decisions d ON d.decision_id = g.decision_id
  JOIN payouts p ON p.payout_id = g.payout_id
 WHERE g.state = 'Issued' AND g.not_before <= %(now)s AND g.expires_at > %(now)s AND p.state = 'Paid'

-- name: expire_unused_grants
-- Seed 000 section 6: "A payout that misses it does not run late on old authority; it waits for a
-- fresh decision. Its daily-limit reservation is released when the unused grant is atomically
-- moved to Expired." {grants} is payout_grants or payout_recall_grants (a psycopg.sql.Identifier
-- bound by grant_sweep.py). SKIP LOCKED: several sweepers share the batch. Each expired grant comes
-- back with what explains it: its payout's state now, how often the sweep published its job, and
-- the last refused delivery (payout grants only: recall refusals are logged, not recorded).
WITH expired AS (
    UPDATE {grants} g
       SET state = 'Expired', expired_at = %(now)s
     WHERE g.grant_id IN (SELECT grant_id FROM {grants}
                           WHERE state = 'Issued' AND expires_at <= %(now)s
                           ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING g.grant_id, g.payout_id, g.not_before, g.expires_at)
SELECT e.grant_id, e.payout_id, e.not_before, e.expires_at, p.state AS payout_state, r.publications,
       (SELECT h.detail->>'code' FROM payout_history h
         WHERE h.payout_id = e.payout_id AND h.grant_id = e.grant_id AND h.kind = 'delivery'
         ORDER BY h.event_id DESC LIMIT 1) AS last_refusal
  FROM expired e
  JOIN payouts p ON p.payout_id = e.payout_id
  LEFT JOIN job_republications r ON r.job_kind = %(job_kind)s AND r.subject_id = e.grant_id::text;
