-- paygate schema: the whole schema in one readable file. A database gets it through the versioned
-- migrations in gateway/store/migrations/ (`paygate db migrate`, also run by `paygate db init` and
-- `paygate up`; docs/decisions/0034, docs/migrations.md); tests/integration/test_migrations.py
-- proves that every migration applied from an empty database yields exactly this catalog, and
-- `paygate db check` compares a live database with it. A change here is also a new migration.
-- The checkout tables are seed 004's "Persisting the Attempt", with every CHECK constraint and
-- partial unique index it names; comments say why.
-- All timestamps come from the application's one clock as parameters; no DEFAULT now() anywhere.

-- Configured provider accounts (seed 004, "The Attempt Row": provider_account is "better as a
-- foreign key to a table of configured provider accounts than as free text, so a spelling
-- variation cannot quietly create a new scope"). Rows are registered from configuration.
CREATE TABLE IF NOT EXISTS provider_accounts (
    provider_account  text        PRIMARY KEY,  -- provider, account and environment: 'cardco:acct_store:live'
    provider          text        NOT NULL,
    environment       text        NOT NULL,
    registered_at     timestamptz NOT NULL,
    CONSTRAINT ck_provider_account_format CHECK (provider_account ~ '^[a-z0-9-]+:[A-Za-z0-9_]+:(test|live)$'),
    CONSTRAINT ck_provider_account_parts CHECK (
        provider = split_part(provider_account, ':', 1) AND environment = split_part(provider_account, ':', 3))
);

-- Bearer tokens (API.md, Conventions). Only an HMAC of the token under the server's pepper is
-- stored, so a copy of this table authenticates nobody.
CREATE TABLE IF NOT EXISTS api_tokens (
    token_id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash            text        NOT NULL,
    role                  text        NOT NULL,
    subject               text        NOT NULL,
    tenant_id             text        NULL,
    approval_limit_minor  bigint      NULL,
    created_at            timestamptz NOT NULL,
    revoked_at            timestamptz NULL,
    CONSTRAINT uq_api_token_hash UNIQUE (token_hash),
    CONSTRAINT ck_api_token_role CHECK (role IN ('merchant', 'customer', 'operator', 'clerk', 'admin')),
    CONSTRAINT ck_api_token_subject CHECK (length(btrim(subject)) > 0),
    -- A clerk acts for exactly one tenant; the tenant comes from the token, never the body.
    CONSTRAINT ck_api_token_clerk_tenant CHECK (role <> 'clerk' OR tenant_id IS NOT NULL),
    CONSTRAINT ck_api_token_approval_limit CHECK (approval_limit_minor IS NULL OR approval_limit_minor >= 0)
);

-- Liveness of worker and clock processes, written by their periodic heartbeat; /metrics reads it.
CREATE TABLE IF NOT EXISTS process_heartbeats (
    process_id        text        PRIMARY KEY,  -- '<kind>:<host>:<pid>'
    kind              text        NOT NULL,
    started_at        timestamptz NOT NULL,
    seen_at           timestamptz NOT NULL,
    beats             bigint      NOT NULL DEFAULT 1,
    CONSTRAINT ck_process_heartbeat_kind CHECK (kind IN ('worker', 'clock'))
);

-- Job messages the database re-publishes (docs/decisions/0022). A job that
-- starts through an outbox row (a payout or recall grant's job) lives in the broker only as a
-- wake-up; the grants sweep finds due work in its own tables and publishes its job again. This
-- row paces that: one publication per subject per half clock tick, claimed by a conditional
-- upsert, so a backlog of sweep wake-ups or two clocks publish once. publications explains an
-- expiry ("published 7 times, never claimed": workers or broker, not policy).
CREATE TABLE IF NOT EXISTS job_republications (
    job_kind          text        NOT NULL,  -- the outbox job kind: 'payout-job', 'payout-recall-job'
    subject_id        text        NOT NULL,  -- what the job works on (a grant id)
    published_at      timestamptz NOT NULL,
    publications      int         NOT NULL DEFAULT 1,
    PRIMARY KEY (job_kind, subject_id),
    CONSTRAINT ck_job_republications_count CHECK (publications > 0)
);

-- The order is the checkout's serialization point (seed 004, "A paid order cannot get another
-- attempt"): creating an attempt locks this row and refuses a Paid or cancelled order.
CREATE TABLE IF NOT EXISTS orders (
    order_id          text        PRIMARY KEY,
    merchant_id       text        NOT NULL,
    customer_id       text        NOT NULL,
    amount_minor      bigint      NOT NULL,
    currency          text        NOT NULL,
    payment_method    text        NOT NULL,     -- a provider payment-method token, never card data
    return_url        text        NULL,         -- where 3-D Secure's redirect comes back (https, or loopback http)
    provider_account  text        NOT NULL REFERENCES provider_accounts (provider_account),
    state             text        NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    version           int         NOT NULL DEFAULT 0,
    -- PaidAfterCancel: the payment succeeded after a cancellation was committed behind its send
    -- intent; Refunded: a refund of the payment succeeded (docs/decisions/0020).
    CONSTRAINT ck_order_state CHECK (state IN
        ('Open', 'Paid', 'Cancelled', 'CancelRequested', 'PaidAfterCancel', 'Refunded')),
    CONSTRAINT ck_order_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_order_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT ck_order_version CHECK (version >= 0)
);

-- The refund sweep walks the cancelled orders whose payment succeeded in this order, a page at a
-- time (refunds.sql owed_refunds).
CREATE INDEX IF NOT EXISTS orders_paid_after_cancel
    ON orders (updated_at, order_id)
    WHERE state = 'PaidAfterCancel';

CREATE TABLE IF NOT EXISTS payment_attempts (
    attempt_id          uuid        PRIMARY KEY,
    order_id            text        NOT NULL REFERENCES orders (order_id),
    customer_id         text        NOT NULL,
    attempt_number      int         NOT NULL,
    provider_account    text        NOT NULL REFERENCES provider_accounts (provider_account),
    endpoint            text        NOT NULL,  -- absolute URL, including any regional host
    api_version         text        NOT NULL,
    client_reference    text        NOT NULL,  -- '<order_id>-a<N>': sent to the provider with the payment
    idempotency_key     text        NOT NULL,  -- generated here, once, never per send
    request_body        text        NOT NULL,  -- the serialized parameters every send of this attempt uses
    amount_minor        bigint      NOT NULL,  -- what a match must agree with
    currency            text        NOT NULL,
    state               text        NOT NULL,
    provider_status     text        NULL,
    next_action         jsonb       NULL,      -- the provider's current customer action, as the page needs it
    next_action_expires_at timestamptz NULL,
    outcome_reason      text        NULL,
    created_at          timestamptz NOT NULL,
    first_sent_at       timestamptz NULL,      -- conservative start of the provider's key window
    escalation_deadline timestamptz NULL,      -- stamped at Started from the account's pinned configuration
    provider_payment_id text        NULL,      -- recorded by the first evidence that carries it
    recovery_owner      text        NULL,
    lease_token         uuid        NULL,      -- new for every claim; a release must present it
    lease_acquired_at   timestamptz NULL,
    lease_expires_at    timestamptz NULL,
    next_check_at       timestamptz NOT NULL,  -- set on creation; advanced by every unresolved path
    version             int         NOT NULL DEFAULT 0,
    CONSTRAINT ck_payment_attempt_state CHECK (state IN
        ('NotStarted', 'Started', 'Unknown', 'Succeeded', 'Failed', 'NotApplied')),
    CONSTRAINT ck_payment_attempt_number CHECK (attempt_number > 0),
    CONSTRAINT ck_payment_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_payment_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT ck_payment_version CHECK (version >= 0),
    -- Never sent: NotStarted, or NotApplied because recovery closed it as never-sent. Everything
    -- else crossed the send boundary and carries both send timestamps.
    CONSTRAINT ck_payment_attempt_send_boundary CHECK (
        ((state = 'NotStarted' OR (state = 'NotApplied' AND outcome_reason = 'never-sent'))
            AND first_sent_at IS NULL AND escalation_deadline IS NULL)
        OR (state <> 'NotStarted' AND outcome_reason IS DISTINCT FROM 'never-sent'
            AND first_sent_at IS NOT NULL AND escalation_deadline IS NOT NULL)),
    -- Never an owner without a fencing token or an expiry.
    CONSTRAINT ck_payment_attempt_lease CHECK (
        (recovery_owner IS NULL AND lease_token IS NULL AND lease_acquired_at IS NULL
            AND lease_expires_at IS NULL)
        OR (recovery_owner IS NOT NULL AND lease_token IS NOT NULL AND lease_acquired_at IS NOT NULL
            AND lease_expires_at IS NOT NULL)),
    CONSTRAINT ck_payment_attempt_action_expiry CHECK (next_action_expires_at IS NULL OR next_action IS NOT NULL),
    CONSTRAINT uq_payment_attempt_number UNIQUE (order_id, attempt_number),
    CONSTRAINT uq_payment_attempt_reference UNIQUE (provider_account, client_reference),
    CONSTRAINT uq_payment_attempt_idempotency_key UNIQUE (provider_account, idempotency_key)
);

-- At most one attempt per order that might still take effect. The checkout insert's
-- ON CONFLICT predicate must stay textually identical to this WHERE clause.
CREATE UNIQUE INDEX IF NOT EXISTS one_live_attempt_per_order
    ON payment_attempts (order_id)
    WHERE state IN ('NotStarted', 'Started', 'Unknown');

CREATE INDEX IF NOT EXISTS payment_attempts_due
    ON payment_attempts (next_check_at, created_at, attempt_id)
    WHERE state IN ('NotStarted', 'Started', 'Unknown');

-- The operator's list of attempts in one state, oldest first (API.md "Operations":
-- GET /v1/ops/attempts?state=Unknown), paged by (created_at, attempt_id) without a scan of history.
CREATE INDEX IF NOT EXISTS payment_attempts_by_state
    ON payment_attempts (state, created_at, attempt_id);

-- The same list over every state (GET /v1/ops/attempts?state=all, the console's first attempts
-- page), newest first without a sort of the whole table.
CREATE INDEX IF NOT EXISTS payment_attempts_by_created
    ON payment_attempts (created_at, attempt_id);

-- One attempt per provider payment, so a lookup or notification by provider payment ID is unambiguous.
CREATE UNIQUE INDEX IF NOT EXISTS one_attempt_per_provider_payment
    ON payment_attempts (provider_account, provider_payment_id)
    WHERE provider_payment_id IS NOT NULL;

-- Append-only: every send intent and result, notification, lookup, and state change.
CREATE TABLE IF NOT EXISTS payment_attempt_events (
    event_id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    attempt_id        uuid        NULL REFERENCES payment_attempts (attempt_id),  -- NULL: a notification no attempt matched
    occurred_at       timestamptz NOT NULL,
    kind              text        NOT NULL,
    actor             text        NOT NULL,  -- endpoint, notification-handler, recovery-<instance>, operator-<id>
    provider_account  text        NULL REFERENCES provider_accounts (provider_account),
    notification_key  text        NULL,      -- notification events only: event ID or canonical synthesized key
    detail            jsonb       NOT NULL,  -- status, reason, provider IDs, endpoint; never card data or secrets
    CONSTRAINT ck_event_kind CHECK (kind IN
        ('send_intent', 'send_result', 'send_abandoned', 'notification', 'lookup', 'transition')),
    -- Every notification has an account, so a keyed row cannot escape uq_notification through a
    -- NULL account; no other kind of event competes for that constraint.
    CONSTRAINT ck_notification_event_fields CHECK (
        (kind = 'notification' AND provider_account IS NOT NULL)
        OR (kind <> 'notification' AND provider_account IS NULL AND notification_key IS NULL)),
    -- Deliberately not NULLS NOT DISTINCT: unkeyed notifications are distinct deliveries.
    CONSTRAINT uq_notification UNIQUE (provider_account, notification_key)
);

CREATE INDEX IF NOT EXISTS payment_attempt_events_history
    ON payment_attempt_events (attempt_id, occurred_at);

-- The Overview's attempts started and settled per minute over the last hour (GET /v1/ops/overview,
-- gateway/store/overview.sql): first send intents and transitions by when they happened, without
-- reading the rest of the history.
CREATE INDEX IF NOT EXISTS payment_attempt_events_recent
    ON payment_attempt_events (occurred_at)
    WHERE kind IN ('send_intent', 'transition');

-- Stored notifications no attempt took at arrival (unmatched, identity conflict, unreadable: the
-- handler names their escalation), the operator's reconciliation queue (GET /v1/ops/notifications).
-- Small: every other notification has an attempt or, for payouts and refunds, no escalation key.
CREATE INDEX IF NOT EXISTS payment_attempt_events_awaiting_reconciliation
    ON payment_attempt_events (occurred_at, event_id)
    WHERE kind = 'notification' AND attempt_id IS NULL AND (detail ->> 'escalation_key') IS NOT NULL;

-- One row per episode of a distinct reason a person must look; its outbox rows deliver the alerts.
CREATE TABLE IF NOT EXISTS payment_escalations (
    escalation_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    escalation_key    text        NOT NULL,  -- e.g. 'attempt:<id>:deadline'
    attempt_id        uuid        NULL REFERENCES payment_attempts (attempt_id),
    reason            text        NOT NULL,
    details           jsonb       NOT NULL DEFAULT '{}'::jsonb,  -- identifiers the operator needs; never secrets
    raised_at         timestamptz NOT NULL,
    acknowledged_at   timestamptz NULL,
    reminder_count    int         NOT NULL DEFAULT 0,
    resolved_at       timestamptz NULL,
    resolution_note   text        NULL,
    next_reminder_at  timestamptz NULL,
    CONSTRAINT ck_escalation_reminder_count CHECK (reminder_count >= 0),
    CONSTRAINT ck_escalation_resolved_reminder CHECK (resolved_at IS NULL OR next_reminder_at IS NULL),
    -- All timestamps come from the one application clock.
    CONSTRAINT ck_escalation_resolved_after_raised CHECK (resolved_at IS NULL OR resolved_at >= raised_at),
    CONSTRAINT ck_escalation_acknowledged_after_raised CHECK (acknowledged_at IS NULL OR acknowledged_at >= raised_at)
);

-- At most one open episode per reason.
CREATE UNIQUE INDEX IF NOT EXISTS one_open_escalation_per_key
    ON payment_escalations (escalation_key)
    WHERE resolved_at IS NULL;

CREATE INDEX IF NOT EXISTS payment_escalations_by_attempt ON payment_escalations (attempt_id);

-- Every episode of a key, resolved ones too: the reconciler escalates a passed deadline once, ever
-- (gateway/pipeline/rows.sql overdue_unescalated).
CREATE INDEX IF NOT EXISTS payment_escalations_by_key ON payment_escalations (escalation_key);

CREATE INDEX IF NOT EXISTS payment_escalations_reminders_due
    ON payment_escalations (next_reminder_at)
    WHERE resolved_at IS NULL;

-- The keyset of GET /v1/ops/escalations, walked either way (docs/decisions/0036).
CREATE INDEX IF NOT EXISTS payment_escalations_by_raised
    ON payment_escalations (raised_at, escalation_id);

-- Transactional outbox: downstream work and alerts, written in the same transaction as their cause.
CREATE TABLE IF NOT EXISTS outbox_messages (
    message_id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dedup_key         text        NOT NULL,  -- identifies the effect or alert, never a fresh UUID
    attempt_id        uuid        NULL REFERENCES payment_attempts (attempt_id),  -- traceability only
    ordering_key      text        NULL,      -- 'attempt:<id>' for business effects, NULL for operator alerts
    kind              text        NOT NULL,  -- order-confirmation, operator-alert, ...
    payload           jsonb       NOT NULL,  -- carries dedup_key, so consumers can deduplicate too
    created_at        timestamptz NOT NULL,
    delivery_attempts int         NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz NOT NULL,
    last_error        text        NULL,
    dispatched_at     timestamptz NULL,
    dead_lettered_at  timestamptz NULL,
    discarded_at      timestamptz NULL,      -- an operator's decision to drop a dead-lettered row
    discarded_by      text        NULL,      -- which operator decided it (token subject)
    discard_note      text        NULL,      -- why: dropping a business effect is a business decision
    CONSTRAINT uq_outbox_dedup_key UNIQUE (dedup_key),
    CONSTRAINT ck_outbox_delivery_attempts CHECK (delivery_attempts >= 0),
    CONSTRAINT ck_outbox_single_terminal_state CHECK (dispatched_at IS NULL OR dead_lettered_at IS NULL),
    CONSTRAINT ck_outbox_discard_after_dead_letter CHECK (discarded_at IS NULL OR dead_lettered_at IS NOT NULL),
    CONSTRAINT ck_outbox_discard_recorded CHECK (
        (discarded_at IS NULL AND discarded_by IS NULL AND discard_note IS NULL)
        OR (discarded_at IS NOT NULL AND discarded_by IS NOT NULL AND discard_note IS NOT NULL))
);

-- The dispatcher's claim walks pending rows in its own order and stops at its LIMIT
-- (docs/decisions/0053); the gauges read pending rows through it too.
CREATE INDEX IF NOT EXISTS outbox_messages_due
    ON outbox_messages (next_attempt_at, message_id)
    WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL;

-- The keyset of GET /v1/ops/outbox, walked either way (docs/decisions/0036): the dispatched rows
-- grow without bound, and a page must not sort them all.
CREATE INDEX IF NOT EXISTS outbox_messages_by_created
    ON outbox_messages (created_at, message_id);

-- Finds each ordering key's earliest unfinished row, including a dead-lettered one that blocks
-- successors. A discarded row is finished: an operator decided its successors may proceed
-- (docs/decisions/0004-outbox-dead-letters-block-until-retried-or-discarded.md).
CREATE INDEX IF NOT EXISTS outbox_messages_unfinished_by_order
    ON outbox_messages (ordering_key, message_id)
    WHERE dispatched_at IS NULL AND discarded_at IS NULL AND ordering_key IS NOT NULL;

-- Rate-limit pauses (seed 004, "pause the sweep"): a lookup answered with 429 stops new lookups
-- in its scope (here the provider account) until paused_until, for every recovery worker at once.
CREATE TABLE IF NOT EXISTS provider_pauses (
    scope             text        PRIMARY KEY,
    paused_until      timestamptz NOT NULL,
    reason            text        NOT NULL
);

-- Lookup token buckets (seed 004: lookups run "at a rate the provider's limits allow";
-- docs/decisions/0042): one per rate-limit scope, shared by every worker process. tokens is what
-- remained at refilled_at (the injected clock's time of the last take); rate and burst are
-- settings, passed with every take, so a changed setting applies at once. A 429 empties the bucket
-- and moves refilled_at to the end of the pause: nothing refills before it.
CREATE TABLE IF NOT EXISTS provider_lookup_buckets (
    scope             text        PRIMARY KEY,
    tokens            numeric     NOT NULL CHECK (tokens >= 0),
    refilled_at       timestamptz NOT NULL,
    granted           integer     NOT NULL DEFAULT 0 CHECK (granted >= 0)  -- what the last take granted
);

-- Append-only enforcement (seed 004, "Event History": "a requirement to enforce, not a property
-- this schema has by itself"). History rows can be inserted, never changed or removed.
CREATE OR REPLACE FUNCTION paygate_reject_history_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'raise_exception', HINT = 'history is evidence; append a new event instead';
END;
$$;

-- A statement's way to refuse itself (gateway/payments/queries.sql mark_started): called from a
-- CASE branch when what the statement was computed for does not hold, it raises SQLSTATE PGR01, so
-- the statement and its transaction commit nothing (gateway/store/db.py REFUSED).
CREATE OR REPLACE FUNCTION paygate_refuse(reason text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION '%', reason USING ERRCODE = 'PGR01';
END;
$$;

CREATE OR REPLACE TRIGGER payment_attempt_events_append_only
    BEFORE UPDATE OR DELETE ON payment_attempt_events
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payment_attempt_events_no_truncate
    BEFORE TRUNCATE ON payment_attempt_events
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

-- A stored notification that no attempt matched (or whose identifiers named two), applied later
-- by an operator's reconciliation (seed 004, "The Notification Handler": "an authorized
-- reconciliation process attaches the stored notification to its attempt"). The event itself is
-- append-only history, so the attachment is its own row; the primary key makes a second
-- application of the same notification a conflict, not a second transition.
CREATE TABLE IF NOT EXISTS notification_applications (
    notification_event_id bigint      PRIMARY KEY REFERENCES payment_attempt_events (event_id),
    attempt_id            uuid        NOT NULL REFERENCES payment_attempts (attempt_id),
    applied_at            timestamptz NOT NULL,
    applied_by            text        NOT NULL   -- operator-<token subject>
);

CREATE OR REPLACE TRIGGER notification_applications_append_only
    BEFORE UPDATE OR DELETE ON notification_applications
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER notification_applications_no_truncate
    BEFORE TRUNCATE ON notification_applications
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

-- ============================================================================================
-- Payouts (seed 000, "Delayed Financial Payout and Ambiguous External Commit").
-- Reference data (tenants, beneficiaries, destinations, policy releases) carries versions that
-- the worker's claim fences on; payouts, grants and attempts are projections changed only by
-- conditional writes; decisions and payout_history are append-only evidence.
-- ============================================================================================

-- settings_version moves only with policy-relevant settings, never with the daily counters, so
-- other payouts' reservations do not roll a claim back (seed 000, "Atomically Claim").
CREATE TABLE IF NOT EXISTS tenants (
    tenant_id             text        PRIMARY KEY,
    daily_limit_minor     bigint      NOT NULL,
    currency              text        NOT NULL,
    payouts_suspended     boolean     NOT NULL,
    settlement_time_zone  text        NOT NULL,  -- IANA name; the day a reservation counts against
    settings_version      int         NOT NULL DEFAULT 1,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT ck_tenant_daily_limit CHECK (daily_limit_minor > 0),
    CONSTRAINT ck_tenant_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT ck_tenant_settings_version CHECK (settings_version > 0)
);

-- Paid and reserved amounts per tenant and settlement date (the release date in the tenant's
-- settlement time zone). The reservation is a conditional UPDATE of this row, so concurrent
-- decisions serialize on it and cannot jointly exceed the limit.
CREATE TABLE IF NOT EXISTS tenant_daily_totals (
    tenant_id         text        NOT NULL REFERENCES tenants (tenant_id),
    settlement_date   date        NOT NULL,
    paid_minor        bigint      NOT NULL DEFAULT 0,
    reserved_minor    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, settlement_date),
    CONSTRAINT ck_daily_paid CHECK (paid_minor >= 0),
    CONSTRAINT ck_daily_reserved CHECK (reserved_minor >= 0)
);

CREATE TABLE IF NOT EXISTS beneficiaries (
    beneficiary_id    text        PRIMARY KEY,
    tenant_id         text        NOT NULL REFERENCES tenants (tenant_id),
    verified          boolean     NOT NULL,
    status            text        NOT NULL,
    version           int         NOT NULL DEFAULT 1,
    updated_at        timestamptz NOT NULL,
    CONSTRAINT ck_beneficiary_status CHECK (status IN ('Active', 'Suspended', 'Closed')),
    CONSTRAINT ck_beneficiary_version CHECK (version > 0)
);

-- provider_token never leaves the payout executor: not in grants, messages, evidence or logs.
CREATE TABLE IF NOT EXISTS destinations (
    destination_id    text        PRIMARY KEY,
    beneficiary_id    text        NOT NULL REFERENCES beneficiaries (beneficiary_id),
    provider_token    text        NOT NULL,
    version           int         NOT NULL DEFAULT 1,
    changed_at        timestamptz NOT NULL,  -- registration or last change: "recently changed" is < 7 days
    CONSTRAINT ck_destination_token CHECK (length(btrim(provider_token)) > 0),
    CONSTRAINT ck_destination_version CHECK (version > 0)
);

CREATE TABLE IF NOT EXISTS policy_releases (
    operation         text        PRIMARY KEY,
    current_version   text        NOT NULL,
    published_at      timestamptz NOT NULL,
    CONSTRAINT ck_policy_release_operation CHECK (operation IN ('payout.submit', 'payout.recall')),
    CONSTRAINT ck_policy_release_version CHECK (length(btrim(current_version)) > 0)
);

-- Reference data has no foreign key from payouts on purpose: a missing tenant, beneficiary or
-- destination is "context unavailable" (Deferred), decided by policy, not a constraint error.
CREATE TABLE IF NOT EXISTS payouts (
    payout_id           text        PRIMARY KEY,  -- unique across every tenant sharing the provider account
    tenant_id           text        NOT NULL,
    requester_id        text        NOT NULL,     -- from authentication, never the body
    beneficiary_id      text        NOT NULL,
    destination_id      text        NOT NULL,
    destination_version int         NOT NULL,     -- the destination version the terms bind
    amount_minor        bigint      NOT NULL,
    currency            text        NOT NULL,
    purpose             text        NOT NULL,
    release_at          timestamptz NOT NULL,
    state               text        NOT NULL,
    version             int         NOT NULL DEFAULT 1,
    attempts_allocated  int         NOT NULL DEFAULT 0,  -- the last attempt number a decision allocated
    active_attempt_id   uuid        NULL,
    reserved_for        date        NULL,         -- settlement date of the held daily-limit reservation
    correlation_id      text        NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CONSTRAINT ck_payout_state CHECK (state IN
        ('Draft', 'Approved', 'Executing', 'Unknown', 'Paid', 'Failed', 'Cancelled')),
    CONSTRAINT ck_payout_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_payout_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT ck_payout_version CHECK (version > 0),
    CONSTRAINT ck_payout_attempts_allocated CHECK (attempts_allocated >= 0),
    -- Only Executing and Unknown have an attempt in flight; only they may lack nothing else.
    CONSTRAINT ck_payout_active_attempt CHECK (
        (state IN ('Executing', 'Unknown')) = (active_attempt_id IS NOT NULL)),
    -- A reservation is held only while a grant or a live attempt may still spend it.
    CONSTRAINT ck_payout_reservation CHECK (
        reserved_for IS NULL OR state IN ('Approved', 'Executing', 'Unknown'))
);

-- The operator's payouts in one state, oldest first (GET /v1/ops/payouts?state=Unknown,
-- and the Draft ones awaiting a person), paged by (created_at, payout_id) without a scan of history.
CREATE INDEX IF NOT EXISTS payouts_by_state ON payouts (state, created_at, payout_id);

-- Decisions are history: written once, never rewritten (seed 000, "Execution Evidence").
CREATE TABLE IF NOT EXISTS payout_decisions (
    decision_id             uuid        PRIMARY KEY,
    position                bigint      GENERATED ALWAYS AS IDENTITY,  -- oldest first, whatever the clock says
    payout_id               text        NOT NULL REFERENCES payouts (payout_id),
    operation               text        NOT NULL,
    outcome                 text        NOT NULL,
    reason                  text        NOT NULL,
    policy_version          text        NULL,     -- NULL only when no release could be read
    terms_fingerprint       text        NOT NULL,
    actor_id                text        NOT NULL, -- who asked: requester, acknowledger or approver
    approval_limit_minor    bigint      NULL,     -- requester facts captured here, not re-read at execution
    evaluated_payout_version int        NOT NULL,
    tenant_settings_version int         NULL,
    beneficiary_version     int         NULL,
    destination_version     int         NULL,
    observed_at             timestamptz NOT NULL,
    correlation_id          text        NOT NULL,
    CONSTRAINT ck_decision_operation CHECK (operation IN ('payout.submit', 'payout.recall')),
    CONSTRAINT ck_decision_outcome CHECK (outcome IN
        ('Allowed', 'Denied', 'Deferred', 'AcknowledgmentRequired', 'EscalationRecommended'))
);

CREATE INDEX IF NOT EXISTS payout_decisions_by_payout ON payout_decisions (payout_id, position);

-- Acknowledgments bind to the destination version they acknowledged: a later change needs a new one.
CREATE TABLE IF NOT EXISTS payout_acknowledgments (
    acknowledgment_id   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payout_id           text        NOT NULL REFERENCES payouts (payout_id),
    reason_code         text        NOT NULL,
    destination_version int         NOT NULL,
    acknowledged_by     text        NOT NULL,
    acknowledged_at     timestamptz NOT NULL,
    CONSTRAINT ck_acknowledgment_reason CHECK (reason_code IN ('destination.recently-changed'))
);

-- Single-use execution authority. Every field comes from the decision and the intent; no
-- credential, destination token or user token. Only the state columns ever change.
CREATE TABLE IF NOT EXISTS payout_grants (
    grant_id                  uuid        PRIMARY KEY,
    decision_id               uuid        NOT NULL REFERENCES payout_decisions (decision_id),
    payout_id                 text        NOT NULL REFERENCES payouts (payout_id),
    tenant_id                 text        NOT NULL,
    operation                 text        NOT NULL,
    audience                  text        NOT NULL,
    terms_fingerprint         text        NOT NULL,
    executable_payout_version int         NOT NULL,
    attempt_number            int         NOT NULL,
    policy_version            text        NOT NULL,
    not_before                timestamptz NOT NULL,
    expires_at                timestamptz NOT NULL,
    state                     text        NOT NULL,
    consumed_at               timestamptz NULL,
    consumed_by               text        NULL,
    revoked_at                timestamptz NULL,
    revoke_reason             text        NULL,
    expired_at                timestamptz NULL,
    CONSTRAINT uq_grant_decision UNIQUE (decision_id),
    CONSTRAINT uq_grant_attempt_number UNIQUE (payout_id, attempt_number),
    CONSTRAINT ck_grant_state CHECK (state IN ('Issued', 'Consumed', 'Revoked', 'Expired')),
    CONSTRAINT ck_grant_window CHECK (expires_at > not_before),
    CONSTRAINT ck_grant_attempt_number CHECK (attempt_number > 0),
    -- The state's own timestamp, and no other: a consumed grant is never reset.
    CONSTRAINT ck_grant_state_fields CHECK (
        (state = 'Issued' AND consumed_at IS NULL AND revoked_at IS NULL AND expired_at IS NULL)
        OR (state = 'Consumed' AND consumed_at IS NOT NULL AND consumed_by IS NOT NULL
            AND revoked_at IS NULL AND expired_at IS NULL)
        OR (state = 'Revoked' AND revoked_at IS NOT NULL AND consumed_at IS NULL AND expired_at IS NULL)
        OR (state = 'Expired' AND expired_at IS NOT NULL AND consumed_at IS NULL AND revoked_at IS NULL))
);

CREATE INDEX IF NOT EXISTS payout_grants_issued ON payout_grants (expires_at) WHERE state = 'Issued';

-- One claimed attempt per consumed grant. Every transition is conditional on lease_epoch; the
-- sweeper fences a lapsed owner by incrementing it.
CREATE TABLE IF NOT EXISTS payout_attempts (
    attempt_id          uuid        PRIMARY KEY,
    payout_id           text        NOT NULL REFERENCES payouts (payout_id),
    grant_id            uuid        NOT NULL REFERENCES payout_grants (grant_id),
    decision_id         uuid        NOT NULL REFERENCES payout_decisions (decision_id),
    attempt_number      int         NOT NULL,
    provider_account    text        NOT NULL REFERENCES provider_accounts (provider_account),
    client_reference    text        NOT NULL,  -- '<payout_id>-a<N>'
    idempotency_key     text        NOT NULL,  -- 'payout-<payout_id>-a<N>', fixed before the first send
    amount_minor        bigint      NOT NULL,
    currency            text        NOT NULL,
    destination_id      text        NOT NULL,
    destination_version int         NOT NULL,
    destination_digest  text        NOT NULL,  -- HMAC of the token: verifies a provider record without holding it
    state               text        NOT NULL,
    claimed_by          text        NOT NULL,
    claimed_at          timestamptz NOT NULL,
    send_deadline       timestamptz NOT NULL,  -- every send, resend or replay happens before it; sent as expires_at
    lease_epoch         int         NOT NULL DEFAULT 1,
    lease_expires_at    timestamptz NULL,      -- NULL: nobody owns the attempt
    started_at          timestamptz NULL,
    sends               int         NOT NULL DEFAULT 0,
    provider_payout_id  text        NULL,
    provider_status     text        NULL,
    outcome_reason      text        NULL,
    next_check_at       timestamptz NULL,      -- when the reconciler looks next
    checks              int         NOT NULL DEFAULT 0,
    escalation_deadline timestamptz NOT NULL,
    resolved_at         timestamptz NULL,
    CONSTRAINT uq_payout_attempt_grant UNIQUE (grant_id),
    CONSTRAINT uq_payout_attempt_number UNIQUE (payout_id, attempt_number),
    CONSTRAINT uq_payout_attempt_reference UNIQUE (provider_account, client_reference),
    CONSTRAINT uq_payout_attempt_idempotency_key UNIQUE (provider_account, idempotency_key),
    CONSTRAINT ck_payout_attempt_state CHECK (state IN
        ('Claimed', 'Started', 'Unknown', 'Succeeded', 'Failed', 'NotStarted', 'NotApplied')),
    CONSTRAINT ck_payout_attempt_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_payout_attempt_epoch CHECK (lease_epoch > 0),
    -- Claimed and NotStarted never reached the provider; everything else crossed the Started write.
    CONSTRAINT ck_payout_attempt_started CHECK (
        (state IN ('Claimed', 'NotStarted')) = (started_at IS NULL)),
    CONSTRAINT ck_payout_attempt_unsent CHECK (started_at IS NOT NULL OR sends = 0),
    CONSTRAINT ck_payout_attempt_resolved CHECK (
        (state IN ('Succeeded', 'Failed', 'NotStarted', 'NotApplied')) = (resolved_at IS NOT NULL))
);

-- No new attempt while an earlier one might still take effect (DESIGN invariant 6).
CREATE UNIQUE INDEX IF NOT EXISTS one_unresolved_attempt_per_payout
    ON payout_attempts (payout_id)
    WHERE state IN ('Claimed', 'Started', 'Unknown');

-- One attempt per CardCo payout within its account (seed 004: a lookup or notification by the
-- provider's id finds at most one attempt; recording an id another attempt owns fails, and
-- gateway/pipeline/rows.py turns that, by this name, into a mismatch escalation).
CREATE UNIQUE INDEX IF NOT EXISTS one_payout_attempt_per_provider_payout
    ON payout_attempts (provider_account, provider_payout_id)
    WHERE provider_payout_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS payout_attempts_leases
    ON payout_attempts (lease_expires_at)
    WHERE state IN ('Claimed', 'Started') AND lease_expires_at IS NOT NULL;

CREATE INDEX IF NOT EXISTS payout_attempts_checks_due
    ON payout_attempts (next_check_at, claimed_at)
    WHERE state IN ('Started', 'Unknown') AND next_check_at IS NOT NULL;

-- The reconciler's deadline escalation reads only the unresolved attempts (migration 0014).
CREATE INDEX IF NOT EXISTS payout_attempts_overdue
    ON payout_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');

-- Payout recall (docs/decisions/0015; seed 000 section 17): its own decisions, grants and
-- attempts, linked to the payout by id and to the paid attempt by its provider payout id. The
-- payout's own decisions, grants, attempts and reservation are never touched by a recall.
CREATE TABLE IF NOT EXISTS payout_recalls (
    payout_id           text        PRIMARY KEY REFERENCES payouts (payout_id),
    recalls_allocated   int         NOT NULL DEFAULT 0,  -- the last recall number a decision allocated
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CONSTRAINT ck_payout_recalls_allocated CHECK (recalls_allocated >= 0)
);

CREATE TABLE IF NOT EXISTS payout_recall_decisions (
    decision_id             uuid        PRIMARY KEY,
    position                bigint      GENERATED ALWAYS AS IDENTITY,
    payout_id               text        NOT NULL REFERENCES payouts (payout_id),
    operation               text        NOT NULL DEFAULT 'payout.recall',
    outcome                 text        NOT NULL,
    reason                  text        NOT NULL,
    policy_version          text        NULL,
    actor_id                text        NOT NULL,
    evaluated_payout_version int        NOT NULL,
    paid_attempt_id         uuid        NULL REFERENCES payout_attempts (attempt_id),
    provider_payout_id      text        NULL,
    observed_at             timestamptz NOT NULL,
    correlation_id          text        NOT NULL,
    CONSTRAINT ck_recall_decision_operation CHECK (operation = 'payout.recall'),
    CONSTRAINT ck_recall_decision_outcome CHECK (outcome IN ('Allowed', 'Denied', 'Deferred'))
);

CREATE INDEX IF NOT EXISTS payout_recall_decisions_by_payout ON payout_recall_decisions (payout_id, position);

CREATE OR REPLACE TRIGGER payout_recall_decisions_append_only
    BEFORE UPDATE OR DELETE ON payout_recall_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payout_recall_decisions_no_truncate
    BEFORE TRUNCATE ON payout_recall_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE TABLE IF NOT EXISTS payout_recall_grants (
    grant_id            uuid        PRIMARY KEY,
    decision_id         uuid        NOT NULL REFERENCES payout_recall_decisions (decision_id),
    payout_id           text        NOT NULL REFERENCES payouts (payout_id),
    tenant_id           text        NOT NULL,
    operation           text        NOT NULL DEFAULT 'payout.recall',
    audience            text        NOT NULL,
    recall_number       int         NOT NULL,
    provider_payout_id  text        NOT NULL,
    policy_version      text        NOT NULL,
    not_before          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    state               text        NOT NULL,
    consumed_at         timestamptz NULL,
    consumed_by         text        NULL,
    expired_at          timestamptz NULL,
    CONSTRAINT uq_recall_grant_decision UNIQUE (decision_id),
    CONSTRAINT uq_recall_grant_number UNIQUE (payout_id, recall_number),
    CONSTRAINT ck_recall_grant_operation CHECK (operation = 'payout.recall'),
    CONSTRAINT ck_recall_grant_state CHECK (state IN ('Issued', 'Consumed', 'Expired')),
    CONSTRAINT ck_recall_grant_window CHECK (expires_at > not_before),
    CONSTRAINT ck_recall_grant_number CHECK (recall_number > 0),
    CONSTRAINT ck_recall_grant_state_fields CHECK (
        (state = 'Issued' AND consumed_at IS NULL AND expired_at IS NULL)
        OR (state = 'Consumed' AND consumed_at IS NOT NULL AND consumed_by IS NOT NULL AND expired_at IS NULL)
        OR (state = 'Expired' AND expired_at IS NOT NULL AND consumed_at IS NULL))
);

CREATE TABLE IF NOT EXISTS payout_recall_attempts (
    attempt_id          uuid        PRIMARY KEY,
    payout_id           text        NOT NULL REFERENCES payouts (payout_id),
    grant_id            uuid        NOT NULL REFERENCES payout_recall_grants (grant_id),
    decision_id         uuid        NOT NULL REFERENCES payout_recall_decisions (decision_id),
    recall_number       int         NOT NULL,
    provider_account    text        NOT NULL REFERENCES provider_accounts (provider_account),
    provider_payout_id  text        NOT NULL,  -- the paid payout the recall names
    client_reference    text        NOT NULL,  -- '<payout_id>-r<N>'
    idempotency_key     text        NOT NULL,  -- 'recall-<payout_id>-r<N>'
    amount_minor        bigint      NOT NULL,
    currency            text        NOT NULL,
    state               text        NOT NULL,
    claimed_by          text        NOT NULL,
    claimed_at          timestamptz NOT NULL,
    send_deadline       timestamptz NOT NULL,  -- sent as expires_at
    lease_epoch         int         NOT NULL DEFAULT 1,
    lease_expires_at    timestamptz NULL,
    started_at          timestamptz NULL,
    sends               int         NOT NULL DEFAULT 0,
    provider_recall_id  text        NULL,
    provider_status     text        NULL,
    outcome_reason      text        NULL,
    next_check_at       timestamptz NULL,
    checks              int         NOT NULL DEFAULT 0,
    escalation_deadline timestamptz NOT NULL,
    resolved_at         timestamptz NULL,
    CONSTRAINT uq_recall_attempt_grant UNIQUE (grant_id),
    CONSTRAINT uq_recall_attempt_number UNIQUE (payout_id, recall_number),
    CONSTRAINT uq_recall_attempt_reference UNIQUE (provider_account, client_reference),
    CONSTRAINT uq_recall_attempt_idempotency_key UNIQUE (provider_account, idempotency_key),
    CONSTRAINT ck_recall_attempt_state CHECK (state IN
        ('Claimed', 'Started', 'Unknown', 'Succeeded', 'Failed', 'NotStarted', 'NotApplied')),
    CONSTRAINT ck_recall_attempt_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_recall_attempt_epoch CHECK (lease_epoch > 0),
    CONSTRAINT ck_recall_attempt_started CHECK ((state IN ('Claimed', 'NotStarted')) = (started_at IS NULL)),
    CONSTRAINT ck_recall_attempt_unsent CHECK (started_at IS NOT NULL OR sends = 0),
    CONSTRAINT ck_recall_attempt_resolved CHECK (
        (state IN ('Succeeded', 'Failed', 'NotStarted', 'NotApplied')) = (resolved_at IS NOT NULL))
);

CREATE UNIQUE INDEX IF NOT EXISTS one_unresolved_recall_per_payout
    ON payout_recall_attempts (payout_id)
    WHERE state IN ('Claimed', 'Started', 'Unknown');

-- One attempt per provider recall within its account (as one_payout_attempt_per_provider_payout).
CREATE UNIQUE INDEX IF NOT EXISTS one_recall_attempt_per_provider_recall
    ON payout_recall_attempts (provider_account, provider_recall_id)
    WHERE provider_recall_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS payout_recall_grants_issued ON payout_recall_grants (expires_at) WHERE state = 'Issued';

CREATE INDEX IF NOT EXISTS payout_recall_attempts_leases
    ON payout_recall_attempts (lease_expires_at)
    WHERE state IN ('Claimed', 'Started') AND lease_expires_at IS NOT NULL;

CREATE INDEX IF NOT EXISTS payout_recall_attempts_checks_due
    ON payout_recall_attempts (next_check_at, claimed_at)
    WHERE state IN ('Started', 'Unknown') AND next_check_at IS NOT NULL;

-- The reconciler's deadline escalation reads only the unresolved attempts (migration 0014).
CREATE INDEX IF NOT EXISTS payout_recall_attempts_overdue
    ON payout_recall_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');

-- Append-only evidence: decisions, transitions, deliveries, provider observations,
-- reconciliations and returns. Identifiers, amounts, currency and reason codes only.
CREATE TABLE IF NOT EXISTS payout_history (
    event_id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payout_id         text        NOT NULL REFERENCES payouts (payout_id),
    attempt_id        uuid        NULL REFERENCES payout_attempts (attempt_id),
    decision_id       uuid        NULL REFERENCES payout_decisions (decision_id),
    grant_id          uuid        NULL REFERENCES payout_grants (grant_id),
    kind              text        NOT NULL,
    occurred_at       timestamptz NOT NULL,
    actor             text        NOT NULL,
    correlation_id    text        NULL,
    detail            jsonb       NOT NULL,
    CONSTRAINT ck_payout_history_kind CHECK (kind IN
        ('decision', 'transition', 'delivery', 'provider_observation', 'reconciliation', 'return',
         'acknowledgment', 'recall'))
);

CREATE INDEX IF NOT EXISTS payout_history_by_payout ON payout_history (payout_id, event_id);

CREATE OR REPLACE TRIGGER payout_decisions_append_only
    BEFORE UPDATE OR DELETE ON payout_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payout_decisions_no_truncate
    BEFORE TRUNCATE ON payout_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payout_acknowledgments_append_only
    BEFORE UPDATE OR DELETE ON payout_acknowledgments
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payout_history_append_only
    BEFORE UPDATE OR DELETE ON payout_history
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payout_history_no_truncate
    BEFORE TRUNCATE ON payout_history
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

-- ============================================================================================
-- Refunds (docs/decisions/0019): a refund of an order's payment is its own
-- operation (seed 004 "Cancellation": "if it turns out to have succeeded, the refund is its own
-- operation"; seed 000 section 17: its own request, decision, authority, attempts and outcomes).
-- The tables have the shape of the payout and recall attempt tables, so the one attempt pipeline
-- runs them as another kind: decisions are append-only, grants single-use, attempts
-- change only by conditional writes fenced by lease_epoch. The paid payment attempt's records stay
-- as they are; the refund links to them by its provider payment id.
-- ============================================================================================
CREATE TABLE IF NOT EXISTS payment_refunds (
    order_id            text        PRIMARY KEY REFERENCES orders (order_id),
    refunds_allocated   int         NOT NULL DEFAULT 0,  -- the last refund number a decision allocated
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CONSTRAINT ck_payment_refunds_allocated CHECK (refunds_allocated >= 0)
);

CREATE TABLE IF NOT EXISTS payment_refund_decisions (
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

CREATE INDEX IF NOT EXISTS payment_refund_decisions_by_order ON payment_refund_decisions (order_id, position);

CREATE OR REPLACE TRIGGER payment_refund_decisions_append_only
    BEFORE UPDATE OR DELETE ON payment_refund_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payment_refund_decisions_no_truncate
    BEFORE TRUNCATE ON payment_refund_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE TABLE IF NOT EXISTS payment_refund_grants (
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

CREATE INDEX IF NOT EXISTS payment_refund_grants_issued ON payment_refund_grants (expires_at) WHERE state = 'Issued';

CREATE TABLE IF NOT EXISTS payment_refund_attempts (
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
CREATE UNIQUE INDEX IF NOT EXISTS one_unresolved_refund_per_order
    ON payment_refund_attempts (order_id)
    WHERE state IN ('Claimed', 'Started', 'Unknown');

CREATE UNIQUE INDEX IF NOT EXISTS one_succeeded_refund_per_order
    ON payment_refund_attempts (order_id)
    WHERE state = 'Succeeded';

-- One attempt per provider refund within its account (as one_payout_attempt_per_provider_payout).
CREATE UNIQUE INDEX IF NOT EXISTS one_refund_attempt_per_provider_refund
    ON payment_refund_attempts (provider_account, provider_refund_id)
    WHERE provider_refund_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS payment_refund_attempts_leases
    ON payment_refund_attempts (lease_expires_at)
    WHERE state IN ('Claimed', 'Started') AND lease_expires_at IS NOT NULL;

CREATE INDEX IF NOT EXISTS payment_refund_attempts_checks_due
    ON payment_refund_attempts (next_check_at, claimed_at)
    WHERE state IN ('Started', 'Unknown') AND next_check_at IS NOT NULL;

-- The reconciler's deadline escalation reads only the unresolved attempts (migration 0014).
CREATE INDEX IF NOT EXISTS payment_refund_attempts_overdue
    ON payment_refund_attempts (escalation_deadline)
    WHERE state IN ('Started', 'Unknown');

-- Append-only refund evidence: decisions, grants, transitions, deliveries, provider observations,
-- reconciliations, notifications. Identifiers, amounts, currency and reason codes only.
CREATE TABLE IF NOT EXISTS payment_refund_history (
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

CREATE INDEX IF NOT EXISTS payment_refund_history_by_order ON payment_refund_history (order_id, event_id);

CREATE OR REPLACE TRIGGER payment_refund_history_append_only
    BEFORE UPDATE OR DELETE ON payment_refund_history
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payment_refund_history_no_truncate
    BEFORE TRUNCATE ON payment_refund_history
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

-- ============================================================================================
-- Effect records (seed 001, "The intent record"; docs/decisions/0012-effect-protocol-states.md).
-- One row per checkout, payout, payout recall or payment refund attempt, written in the
-- transaction that makes the attempt sendable, before any provider call: the canonical execution
-- manifest, SHA-256 over its RFC 8785 form, the idempotency key and, for payouts, recalls and
-- refunds, the digests of the policy and approvals behind it. attempt_id names a payment_attempts, payout_attempts,
-- payout_recall_attempts or payment_refund_attempts row (attempt_kind says which), so it carries no foreign key. The record
-- is immutable: its protocol state is the last ledger row.
-- ============================================================================================
CREATE TABLE IF NOT EXISTS effect_records (
    attempt_id          uuid        PRIMARY KEY,
    attempt_kind        text        NOT NULL,
    rail                text        NOT NULL,  -- the provider: 'cardco'
    provider_account    text        NOT NULL REFERENCES provider_accounts (provider_account),
    idempotency_key     text        NOT NULL,
    effect_digest       bytea       NOT NULL,  -- SHA-256(JCS(manifest))
    policy_digest       bytea       NULL,      -- payouts: the allowing decision's policy version and reason
    approval_set_digest bytea       NULL,      -- payouts: the acknowledgments and approvals behind it
    manifest            jsonb       NOT NULL,  -- identifiers, amounts, fields; never a destination token
    created_at          timestamptz NOT NULL,
    CONSTRAINT ck_effect_record_kind CHECK (attempt_kind IN ('payment', 'payout', 'payout_recall', 'payment_refund')),
    CONSTRAINT ck_effect_record_rail CHECK (rail = split_part(provider_account, ':', 1)),
    CONSTRAINT ck_effect_record_digest_length CHECK (octet_length(effect_digest) = 32),
    CONSTRAINT ck_effect_record_policy_digest_length CHECK (
        policy_digest IS NULL OR octet_length(policy_digest) = 32),
    CONSTRAINT ck_effect_record_approval_digest_length CHECK (
        approval_set_digest IS NULL OR octet_length(approval_set_digest) = 32),
    -- A payout, recall or refund effect is governed (its own decision); a checkout's authority is
    -- its customer.
    CONSTRAINT ck_effect_record_governance CHECK (
        (attempt_kind IN ('payout', 'payout_recall', 'payment_refund'))
        = (policy_digest IS NOT NULL AND approval_set_digest IS NOT NULL)),
    -- The provider's key scope is the account: one intent per key there, whatever the attempt.
    CONSTRAINT uq_effect_record_idempotency_key UNIQUE (provider_account, idempotency_key)
);

-- Append-only protocol ledger: every transition of every effect, numbered per effect. The unique
-- sequence turns two writers that read the same state into a conflict instead of a fork.
CREATE TABLE IF NOT EXISTS effect_ledger (
    entry_id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    attempt_id        uuid        NOT NULL REFERENCES effect_records (attempt_id),
    sequence          int         NOT NULL,
    from_state        text        NULL,
    to_state          text        NOT NULL,
    effect_digest     bytea       NOT NULL,
    idempotency_key   text        NOT NULL,
    occurred_at       timestamptz NOT NULL,
    actor             text        NOT NULL,
    detail            jsonb       NOT NULL,  -- decision ids, reasons; never payloads or secrets
    CONSTRAINT uq_effect_ledger_sequence UNIQUE (attempt_id, sequence),
    CONSTRAINT ck_effect_ledger_sequence CHECK (sequence > 0),
    CONSTRAINT ck_effect_ledger_first CHECK ((sequence = 1) = (from_state IS NULL)),
    CONSTRAINT ck_effect_ledger_digest_length CHECK (octet_length(effect_digest) = 32),
    CONSTRAINT ck_effect_ledger_states CHECK (to_state IN
        ('PROPOSED', 'POLICY_EVALUATED', 'PENDING_APPROVAL', 'APPROVED', 'INTENT_PERSISTED',
         'AUTHORIZATION_ISSUED', 'EXECUTING', 'EFFECT_CONFIRMED', 'EFFECT_FAILED', 'OUTCOME_UNKNOWN',
         'RECONCILING', 'CERTIFIED'))
);

-- Signed certificates of confirmed effects, one per effect, never rewritten.
CREATE TABLE IF NOT EXISTS effect_certificates (
    attempt_id        uuid        PRIMARY KEY REFERENCES effect_records (attempt_id),
    certificate       jsonb       NOT NULL,  -- integers only: re-serializing keeps its RFC 8785 form
    key_id            text        NOT NULL,
    signature         text        NOT NULL,  -- base64 Ed25519 over the canonical certificate
    issued_at         timestamptz NOT NULL
);

CREATE OR REPLACE TRIGGER effect_records_append_only
    BEFORE UPDATE OR DELETE ON effect_records
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER effect_records_no_truncate
    BEFORE TRUNCATE ON effect_records
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER effect_ledger_append_only
    BEFORE UPDATE OR DELETE ON effect_ledger
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER effect_ledger_no_truncate
    BEFORE TRUNCATE ON effect_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER effect_certificates_append_only
    BEFORE UPDATE OR DELETE ON effect_certificates
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER effect_certificates_no_truncate
    BEFORE TRUNCATE ON effect_certificates
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();

-- ============================================================================================
-- Metrics (docs/decisions/0040 and 0041). Counters and histogram buckets of
-- events, summed over every process of the fleet: each process adds its deltas
-- (gateway/store/counters.sql), and /metrics reads the sums, so every web process reports the
-- same value and a restart loses nothing flushed. Labels are bounded (gateway/instruments.py):
-- kind names and reason codes only, never an id, account, token or free text.
-- ============================================================================================
CREATE TABLE IF NOT EXISTS metric_counters (
    name              text        NOT NULL,  -- the sample name: '<counter>_total', '<histogram>_bucket', ...
    labels            jsonb       NOT NULL,  -- {"kind": "payout", "reason": "grant.expired"}
    value             float8      NOT NULL,
    PRIMARY KEY (name, labels),
    CONSTRAINT ck_metric_counter_value CHECK (value >= 0)
);

-- A decision is a row: the database counts it in the deciding transaction, so the count commits
-- (or rolls back) with the decision itself, under the attempt kind the table decides for.
CREATE OR REPLACE FUNCTION paygate_count_decision() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO metric_counters (name, labels, value)
    VALUES ('paygate_payout_decisions_total',
            jsonb_build_object('kind', CASE TG_TABLE_NAME WHEN 'payout_decisions' THEN 'payout'
                                                          WHEN 'payout_recall_decisions' THEN 'payout_recall'
                                                          WHEN 'payment_refund_decisions' THEN 'payment_refund' END,
                               'outcome', NEW.outcome,
                               'reason', CASE WHEN NEW.reason ~ '^[a-z]+([._-][a-z]+)*$' AND length(NEW.reason) <= 64
                                              THEN NEW.reason ELSE 'other' END),
            1)
    ON CONFLICT (name, labels) DO UPDATE SET value = metric_counters.value + 1;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER payout_decisions_counted
    AFTER INSERT ON payout_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

CREATE OR REPLACE TRIGGER payout_recall_decisions_counted
    AFTER INSERT ON payout_recall_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

CREATE OR REPLACE TRIGGER payment_refund_decisions_counted
    AFTER INSERT ON payment_refund_decisions
    FOR EACH ROW EXECUTE FUNCTION paygate_count_decision();

-- /metrics counts the dead letters nobody has retried or discarded yet, per message kind.
CREATE INDEX IF NOT EXISTS outbox_messages_dead
    ON outbox_messages (kind)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

-- Provider-side reconciliation runs and their findings (docs/decisions/0071).
CREATE TABLE IF NOT EXISTS reconciliation_runs (
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
CREATE INDEX IF NOT EXISTS reconciliation_runs_recent ON reconciliation_runs (requested_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS reconciliation_runs_by_account ON reconciliation_runs (provider_account, requested_at DESC);

CREATE TABLE IF NOT EXISTS reconciliation_findings (
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
CREATE INDEX IF NOT EXISTS reconciliation_findings_by_object
    ON reconciliation_findings (provider_account, kind, provider_object_id, class);
