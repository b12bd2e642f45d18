-- The keysets of GET /v1/ops/escalations and GET /v1/ops/outbox, walked either way (issue 15
-- item 2, docs/decisions/0036): a page must not sort every row. Backward compatible: indexes
-- change no statement's meaning. IF NOT EXISTS because the outbox grows without bound: on a large
-- one, build both CONCURRENTLY by hand before deploying (docs/migrations.md), and this migration
-- only records them.

CREATE INDEX IF NOT EXISTS payment_escalations_by_raised
    ON payment_escalations (raised_at, escalation_id);

CREATE INDEX IF NOT EXISTS outbox_messages_by_created
    ON outbox_messages (created_at, message_id);
