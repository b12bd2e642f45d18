-- Job messages the database re-publishes (issue 11 item 1, docs/decisions/0022): the grants sweep
-- paces its re-publications of a due grant's job here. Backward compatible: a new table that the
-- previous release does not read.

CREATE TABLE job_republications (
    job_kind          text        NOT NULL,  -- the outbox job kind: 'payout-job', 'payout-recall-job'
    subject_id        text        NOT NULL,  -- what the job works on (a grant id)
    published_at      timestamptz NOT NULL,
    publications      int         NOT NULL DEFAULT 1,
    PRIMARY KEY (job_kind, subject_id),
    CONSTRAINT ck_job_republications_count CHECK (publications > 0)
);
