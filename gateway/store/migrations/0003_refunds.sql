-- Refunds (issue 11 item 3, docs/decisions/0019, 0020): an order may end PaidAfterCancel or
-- Refunded, refund tables shaped like the attempt tables, and effect records of kind
-- payment_refund. Backward compatible (expand): the two checks only admit more values than the
-- previous release writes, and the tables are new; the previous release reads none of them.

ALTER TABLE orders DROP CONSTRAINT ck_order_state,
    ADD CONSTRAINT ck_order_state CHECK (state IN
        ('Open', 'Paid', 'Cancelled', 'CancelRequested', 'PaidAfterCancel', 'Refunded'));

ALTER TABLE effect_records DROP CONSTRAINT ck_effect_record_kind,
    ADD CONSTRAINT ck_effect_record_kind CHECK (
        attempt_kind IN ('payment', 'payout', 'payout_recall', 'payment_refund')),
    DROP CONSTRAINT ck_effect_record_governance,
    ADD CONSTRAINT ck_effect_record_governance CHECK (
        (attempt_kind IN ('payout', 'payout_recall', 'payment_refund'))
        = (policy_digest IS NOT NULL AND approval_set_digest IS NOT NULL));

CREATE TABLE payment_refunds (
    order_id            text        PRIMARY KEY REFERENCES orders (order_id),
    refunds_allocated   int         NOT NULL DEFAULT 0,  -- the last refund number a decision allocated
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CONSTRAINT ck_payment_refunds_allocated CHECK (refunds_allocated >= 0)
);

CREATE TABLE payment_refund_decisions (
    decision_id             uuid        PRIMARY KEY,
    position                bigint      GENERATED ALWAYS AS IDENTITY,
    order_id                text        NOT NULL REFERENCES orders (order_id),
    operation               text        NOT NULL DEFAULT 'payment.refund',
    cause                   text        NOT NULL,  -- why it was asked for
    outcome                 text        NOT NULL,
    reason                  text        NOT NULL,
    policy_version          text        NOT NULL,
    actor_id                text        NOT NULL,  -- 'merchant:<id>' or 'system:cancellation'
    evaluated_order_version int         NOT NULL,
    paid_attempt_id         uuid        NULL REFERENCES payment_attempts (attempt_id),
    provider_payment_id     text        NULL,
    observed_at             timestamptz NOT NULL,
    correlation_id          text        NOT NULL,
    CONSTRAINT ck_refund_decision_operation CHECK (operation = 'payment.refund'),
    CONSTRAINT ck_refund_decision_cause CHECK (cause IN ('paid-after-cancel', 'merchant-request')),
    CONSTRAINT ck_refund_decision_outcome CHECK (outcome IN ('Allowed', 'Denied', 'Deferred'))
);

CREATE INDEX payment_refund_decisions_by_order ON payment_refund_decisions (order_id, position);

CREATE TRIGGER payment_refund_decisions_append_only
    BEFORE UPDATE OR DELETE ON payment_refund_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE TRIGGER payment_refund_decisions_no_truncate
    BEFORE TRUNCATE ON payment_refund_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE TABLE payment_refund_grants (
    grant_id            uuid        PRIMARY KEY,
    decision_id         uuid        NOT NULL REFERENCES payment_refund_decisions (decision_id),
    order_id            text        NOT NULL REFERENCES orders (order_id),
    merchant_id         text        NOT NULL,
    operation           text        NOT NULL DEFAULT 'payment.refund',
    audience            text        NOT NULL,
    refund_number       int         NOT NULL,
    provider_payment_id text        NOT NULL,
    policy_version      text        NOT NULL,
    not_before          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    state               text        NOT NULL,
    consumed_at         timestamptz NULL,
    consumed_by         text        NULL,
    expired_at          timestamptz NULL,
    CONSTRAINT uq_refund_grant_decision UNIQUE (decision_id),
    CONSTRAINT uq_refund_grant_number UNIQUE (order_id, refund_number),
    CONSTRAINT ck_refund_grant_operation CHECK (operation = 'payment.refund'),
    CONSTRAINT ck_refund_grant_number CHECK (refund_number > 0),
    CONSTRAINT ck_refund_grant_state CHECK (state IN ('Issued', 'Consumed', 'Expired')),
    CONSTRAINT ck_refund_grant_window CHECK (expires_at > not_before),
    CONSTRAINT ck_refund_grant_state_fields CHECK (
        (state = 'Issued' AND consumed_at IS NULL AND expired_at IS NULL)
        OR (state = 'Consumed' AND consumed_at IS NOT NULL AND consumed_by IS NOT NULL AND expired_at IS NULL)
        OR (state = 'Expired' AND expired_at IS NOT NULL AND consumed_at IS NULL))
);

CREATE INDEX payment_refund_grants_issued ON payment_refund_grants (expires_at) WHERE state = 'Issued';

CREATE TABLE payment_refund_attempts (
    attempt_id          uuid        PRIMARY KEY,
    order_id            text        NOT NULL REFERENCES orders (order_id),
    grant_id            uuid        NOT NULL REFERENCES payment_refund_grants (grant_id),
    decision_id         uuid        NOT NULL REFERENCES payment_refund_decisions (decision_id),
    refund_number       int         NOT NULL,
    provider_account    text        NOT NULL REFERENCES provider_accounts (provider_account),
    provider_payment_id text        NOT NULL,  -- the paid payment the refund names
    client_reference    text        NOT NULL,  -- '<order_id>-r<N>'
    idempotency_key     text        NOT NULL,  -- 'refund-<order_id>-r<N>', fixed before the first send
    amount_minor        bigint      NOT NULL,  -- the whole payment: refunds are full
    currency            text        NOT NULL,
    state               text        NOT NULL,
    claimed_by          text        NOT NULL,
    claimed_at          timestamptz NOT NULL,
    send_deadline       timestamptz NOT NULL,  -- every send happens before it; sent as expires_at
    lease_epoch         int         NOT NULL DEFAULT 1,
    lease_expires_at    timestamptz NULL,
    started_at          timestamptz NULL,
    sends               int         NOT NULL DEFAULT 0,
    provider_refund_id  text        NULL,
    provider_status     text        NULL,
    outcome_reason      text        NULL,
    next_check_at       timestamptz NULL,
    checks              int         NOT NULL DEFAULT 0,
    escalation_deadline timestamptz NOT NULL,
    resolved_at         timestamptz NULL,
    CONSTRAINT uq_refund_attempt_grant UNIQUE (grant_id),
    CONSTRAINT uq_refund_attempt_number UNIQUE (order_id, refund_number),
    CONSTRAINT uq_refund_attempt_reference UNIQUE (provider_account, client_reference),
    CONSTRAINT uq_refund_attempt_idempotency_key UNIQUE (provider_account, idempotency_key),
    CONSTRAINT ck_refund_attempt_state CHECK (state IN
        ('Claimed', 'Started', 'Unknown', 'Succeeded', 'Failed', 'NotStarted', 'NotApplied')),
    CONSTRAINT ck_refund_attempt_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_refund_attempt_epoch CHECK (lease_epoch > 0),
    CONSTRAINT ck_refund_attempt_started CHECK ((state IN ('Claimed', 'NotStarted')) = (started_at IS NULL)),
    CONSTRAINT ck_refund_attempt_unsent CHECK (started_at IS NOT NULL OR sends = 0),
    CONSTRAINT ck_refund_attempt_resolved CHECK (
        (state IN ('Succeeded', 'Failed', 'NotStarted', 'NotApplied')) = (resolved_at IS NOT NULL))
);

-- No second refund while one might still take effect; at most one that took effect per order.
CREATE UNIQUE INDEX one_unresolved_refund_per_order
    ON payment_refund_attempts (order_id)
    WHERE state IN ('Claimed', 'Started', 'Unknown');

CREATE UNIQUE INDEX one_succeeded_refund_per_order
    ON payment_refund_attempts (order_id)
    WHERE state = 'Succeeded';

CREATE INDEX payment_refund_attempts_leases
    ON payment_refund_attempts (lease_expires_at)
    WHERE state IN ('Claimed', 'Started') AND lease_expires_at IS NOT NULL;

CREATE INDEX payment_refund_attempts_checks_due
    ON payment_refund_attempts (next_check_at, claimed_at)
    WHERE state IN ('Started', 'Unknown') AND next_check_at IS NOT NULL;

-- Append-only refund evidence: decisions, grants, transitions, deliveries, provider observations,
-- reconciliations, notifications. Identifiers, amounts, currency and reason codes only.
CREATE TABLE payment_refund_history (
    event_id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id          text        NOT NULL REFERENCES orders (order_id),
    attempt_id        uuid        NULL REFERENCES payment_refund_attempts (attempt_id),
    decision_id       uuid        NULL REFERENCES payment_refund_decisions (decision_id),
    grant_id          uuid        NULL REFERENCES payment_refund_grants (grant_id),
    kind              text        NOT NULL,
    occurred_at       timestamptz NOT NULL,
    actor             text        NOT NULL,
    correlation_id    text        NULL,
    detail            jsonb       NOT NULL,
    CONSTRAINT ck_refund_history_kind CHECK (kind IN
        ('decision', 'grant', 'transition', 'delivery', 'provider_observation', 'reconciliation', 'notification'))
);

CREATE INDEX payment_refund_history_by_order ON payment_refund_history (order_id, event_id);

CREATE TRIGGER payment_refund_history_append_only
    BEFORE UPDATE OR DELETE ON payment_refund_history
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE TRIGGER payment_refund_history_no_truncate
    BEFORE TRUNCATE ON payment_refund_history
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();
