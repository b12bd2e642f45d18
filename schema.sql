-- paygate schema. Applied by `paygate db init` (idempotent: every statement is IF NOT EXISTS or
-- OR REPLACE) and compared by `paygate db check`. The checkout tables are seed 004's "Persisting
-- the Attempt", with every CHECK constraint and partial unique index it names; comments say why.
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

-- The order is the checkout's serialization point (seed 004, "A paid order cannot get another
-- attempt"): creating an attempt locks this row and refuses a Paid or cancelled order.
CREATE TABLE IF NOT EXISTS orders (
    order_id          text        PRIMARY KEY,
    merchant_id       text        NOT NULL,
    customer_id       text        NOT NULL,
    amount_minor      bigint      NOT NULL,
    currency          text        NOT NULL,
    payment_method    text        NOT NULL,     -- a provider payment-method token, never card data
    provider_account  text        NOT NULL REFERENCES provider_accounts (provider_account),
    state             text        NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    version           int         NOT NULL DEFAULT 0,
    CONSTRAINT ck_order_state CHECK (state IN ('Open', 'Paid', 'Cancelled', 'CancelRequested')),
    CONSTRAINT ck_order_amount CHECK (amount_minor > 0),
    CONSTRAINT ck_order_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT ck_order_version CHECK (version >= 0)
);

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

CREATE INDEX IF NOT EXISTS payment_escalations_reminders_due
    ON payment_escalations (next_reminder_at)
    WHERE resolved_at IS NULL;

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
    CONSTRAINT uq_outbox_dedup_key UNIQUE (dedup_key),
    CONSTRAINT ck_outbox_delivery_attempts CHECK (delivery_attempts >= 0),
    CONSTRAINT ck_outbox_single_terminal_state CHECK (dispatched_at IS NULL OR dead_lettered_at IS NULL),
    CONSTRAINT ck_outbox_discard_after_dead_letter CHECK (discarded_at IS NULL OR dead_lettered_at IS NOT NULL)
);

CREATE INDEX IF NOT EXISTS outbox_messages_pending
    ON outbox_messages (next_attempt_at, created_at)
    WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL;

-- Finds each ordering key's earliest unfinished row, including a dead-lettered one that blocks successors.
CREATE INDEX IF NOT EXISTS outbox_messages_unfinished_by_order
    ON outbox_messages (ordering_key, message_id)
    WHERE dispatched_at IS NULL AND ordering_key IS NOT NULL;

-- Append-only enforcement (seed 004, "Event History": "a requirement to enforce, not a property
-- this schema has by itself"). History rows can be inserted, never changed or removed.
CREATE OR REPLACE FUNCTION paygate_reject_history_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'raise_exception', HINT = 'history is evidence; append a new event instead';
END;
$$;

CREATE OR REPLACE TRIGGER payment_attempt_events_append_only
    BEFORE UPDATE OR DELETE ON payment_attempt_events
    FOR EACH ROW EXECUTE FUNCTION paygate_reject_history_change();

CREATE OR REPLACE TRIGGER payment_attempt_events_no_truncate
    BEFORE TRUNCATE ON payment_attempt_events
    FOR EACH STATEMENT EXECUTE FUNCTION paygate_reject_history_change();
