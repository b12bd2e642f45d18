-- The reconciler asks every round which unresolved attempts are past their escalation deadline
-- (rows.sql overdue_unescalated): without an index over the unresolved ones that question reads
-- every attempt ever made, resolved or not, on every tick. Backward compatible: an index changes
-- no statement's meaning.

CREATE INDEX payout_attempts_overdue ON payout_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');

CREATE INDEX payout_recall_attempts_overdue ON payout_recall_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');

CREATE INDEX payment_refund_attempts_overdue ON payment_refund_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');
