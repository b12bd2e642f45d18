-- Provider-side reconciliation runs (docs/decisions/0071): one row per run over one provider
-- account's window, its resume position kept here so a run killed half-way continues after the
-- last page it committed; one finding per provider object the run listed (and per Succeeded
-- attempt whose object the provider did not list). Backward compatible: new tables only.

CREATE TABLE reconciliation_runs (
    run_id            uuid        PRIMARY KEY,
    provider_account  text        NOT NULL REFERENCES provider_accounts (provider_account),
    window_from       timestamptz NOT NULL,
    window_to         timestamptz NOT NULL,
    state             text        NOT NULL,
    started_by        text        NOT NULL,  -- 'clock', or the operator's token subject
    requested_at      timestamptz NOT NULL,
    finished_at       timestamptz NULL,
    kind_position     int         NOT NULL DEFAULT 0,  -- the listed kind being paged (the provider's order)
    page_cursor       text        NULL,      -- where that kind's listing continues; NULL: from its start
    listed            boolean     NOT NULL DEFAULT false,  -- every kind paged; the missing check remains
    objects_read      int         NOT NULL DEFAULT 0,
    matched           int         NOT NULL DEFAULT 0,
    evidence          int         NOT NULL DEFAULT 0,
    orphan            int         NOT NULL DEFAULT 0,
    disagreement      int         NOT NULL DEFAULT 0,
    missing           int         NOT NULL DEFAULT 0,
    failure           text        NULL,
    CONSTRAINT ck_reconciliation_run_state CHECK (state IN ('Running', 'Finished', 'Failed')),
    CONSTRAINT ck_reconciliation_run_window CHECK (window_to > window_from),
    CONSTRAINT ck_reconciliation_run_finished CHECK ((state = 'Running') = (finished_at IS NULL)),
    CONSTRAINT ck_reconciliation_run_counts CHECK (
        LEAST(kind_position, objects_read, matched, evidence, orphan, disagreement, missing) >= 0)
);

-- The runs list, newest first (gateway/domain/paging.py keysets), and each account's latest.
CREATE INDEX reconciliation_runs_recent ON reconciliation_runs (requested_at DESC, run_id DESC);
CREATE INDEX reconciliation_runs_by_account ON reconciliation_runs (provider_account, requested_at DESC);

CREATE TABLE reconciliation_findings (
    run_id             uuid        NOT NULL REFERENCES reconciliation_runs (run_id),
    provider_account   text        NOT NULL,
    kind               text        NOT NULL,  -- payment, payment_refund, payout, payout_recall
    provider_object_id text        NOT NULL,
    class              text        NOT NULL,
    attempt_id         uuid        NULL,
    details            jsonb       NOT NULL,
    found_at           timestamptz NOT NULL,
    PRIMARY KEY (run_id, kind, provider_object_id),
    CONSTRAINT ck_reconciliation_finding_class CHECK (
        class IN ('matched', 'evidence', 'orphan', 'disagreement', 'missing'))
);

-- Whether an earlier run already found (and escalated) the same thing about the same object.
CREATE INDEX reconciliation_findings_by_object
    ON reconciliation_findings (provider_account, kind, provider_object_id, class);
