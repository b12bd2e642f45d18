-- The operator's Overview (GET /v1/ops/overview; issue 25) and the attempts list opened on every
-- state (GET /v1/ops/attempts?state=all). Two indexes so that neither reads the whole history:
-- the last hour's send intents and transitions, by when they happened (gateway/store/overview.sql
-- attempts_per_minute), and the attempts newest first whatever their state (operator.sql
-- attempts). Backward compatible: an index changes no statement's meaning.

CREATE INDEX payment_attempt_events_recent
    ON payment_attempt_events (occurred_at)
    WHERE kind IN ('send_intent', 'transition');

CREATE INDEX payment_attempts_by_created
    ON payment_attempts (created_at, attempt_id);
