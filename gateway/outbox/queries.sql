-- Outbox writes. Every row is written in the same transaction as the state change that causes it.

-- name: enqueue
-- ON CONFLICT names its arbiter: a retried cause, or the same effect reached by another route
-- (endpoint, notification, lookup), is a no-op rather than a unique violation.
INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
VALUES (%(dedup_key)s, %(attempt_id)s, %(ordering_key)s, %(kind)s, %(payload)s, %(now)s, %(now)s)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING message_id;
