-- Escalation episodes. Keys name the condition ('attempt:<id>:deadline'); alerts name the episode.

-- name: raise
-- At most one open episode per key: a second raiser (another worker, another pass, a redelivered
-- notification) adds nothing, and so queues no second alert. next_reminder_at is when someone
-- should have acknowledged it (seed 004, "Reminders").
INSERT INTO payment_escalations (escalation_key, attempt_id, reason, details, raised_at, next_reminder_at)
VALUES (%(escalation_key)s, %(attempt_id)s, %(reason)s, %(details)s, %(now)s, %(next_reminder_at)s)
ON CONFLICT (escalation_key) WHERE resolved_at IS NULL DO NOTHING
RETURNING escalation_id;

-- name: resolve_for_attempt
-- Every writer that resolves an attempt resolves its open escalations in the same transaction,
-- so no reminder follows a settled payment.
UPDATE payment_escalations
   SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
 WHERE attempt_id = %(attempt_id)s AND resolved_at IS NULL
RETURNING escalation_id;
