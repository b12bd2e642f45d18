-- The recall tables as an instance of the one attempt pipeline (issue 14; tests/integration/
-- test_schema_twins.py): the checks, indexes and TRUNCATE guard the payout tables have and the
-- recall tables were found missing. Backward compatible: the previous release writes no row that
-- breaks these checks (a recall number and an amount are positive, an epoch starts at 1, nothing
-- is sent before Started), and indexes and a trigger change no statement's meaning.

ALTER TABLE payout_recall_grants
    ADD CONSTRAINT ck_recall_grant_number CHECK (recall_number > 0);

ALTER TABLE payout_recall_attempts
    ADD CONSTRAINT ck_recall_attempt_amount CHECK (amount_minor > 0),
    ADD CONSTRAINT ck_recall_attempt_epoch CHECK (lease_epoch > 0),
    ADD CONSTRAINT ck_recall_attempt_unsent CHECK (started_at IS NOT NULL OR sends = 0);

-- The grants sweep and the lease sweep find their rows without a scan, as for payouts.
CREATE INDEX payout_recall_grants_issued ON payout_recall_grants (expires_at) WHERE state = 'Issued';

CREATE INDEX payout_recall_attempts_leases
    ON payout_recall_attempts (lease_expires_at)
    WHERE state IN ('Claimed', 'Started') AND lease_expires_at IS NOT NULL;

-- Recall decisions are evidence: not even a TRUNCATE removes them.
CREATE TRIGGER payout_recall_decisions_no_truncate
    BEFORE TRUNCATE ON payout_recall_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();
