-- What a payout or recall attempt's effect record commits to besides its request (seed 001,
-- "The intent record": policy_digest and approval_set_digest), read in the claim's transaction.

-- name: payout_governance
-- What a payout attempt's decision rests on, read in the claim's transaction: the allowing
-- decision, the requester, and the decisions of this authorization round (after the previous
-- Allowed one), whose AcknowledgmentRequired or EscalationRecommended outcomes were pending approval.
SELECT d.*, p.requester_id,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('decision_id', r.decision_id, 'outcome', r.outcome)
                                  ORDER BY r.position), '[]'::jsonb)
          FROM payout_decisions r
         WHERE r.payout_id = d.payout_id AND r.position < d.position
           AND r.position > coalesce((SELECT max(a.position) FROM payout_decisions a
                                       WHERE a.payout_id = d.payout_id AND a.outcome = 'Allowed'
                                         AND a.position < d.position), 0)) AS round
  FROM payout_decisions d JOIN payouts p USING (payout_id)
 WHERE d.decision_id = %(decision_id)s;

-- name: payout_acknowledgments
-- Acknowledgments bind to a destination version: only those of the version this attempt pays count.
SELECT acknowledgment_id, reason_code, destination_version, acknowledged_by
  FROM payout_acknowledgments
 WHERE payout_id = %(payout_id)s AND destination_version = %(destination_version)s
 ORDER BY acknowledgment_id;

-- name: recall_governance
-- What a recall attempt's decision is: its own Allowed recall decision (docs/decisions/0015).
SELECT * FROM payout_recall_decisions WHERE decision_id = %(decision_id)s;
