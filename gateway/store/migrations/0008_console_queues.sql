-- The console's queues (issue 15 item 5, docs/decisions/0038): stored notifications no attempt
-- took, awaiting reconciliation (GET /v1/ops/notifications), and payouts in one state
-- (GET /v1/ops/payouts?state=...). Backward compatible: indexes change no statement's meaning.
-- IF NOT EXISTS: on a large event history or payout table, build them CONCURRENTLY by hand before
-- deploying (docs/migrations.md), and this migration only records them.

CREATE INDEX IF NOT EXISTS payment_attempt_events_awaiting_reconciliation
    ON payment_attempt_events (occurred_at, event_id)
    WHERE kind = 'notification' AND attempt_id IS NULL AND (detail ->> 'escalation_key') IS NOT NULL;

CREATE INDEX IF NOT EXISTS payouts_by_state ON payouts (state, created_at, payout_id);
