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

-- name: resolve_by_key_prefix
-- Payout attempts cannot fill attempt_id (it references checkout attempts), so their episodes are
-- named by key: 'payout-attempt:<id>:<problem>' (deadline, mismatch, effect-*). Closing every open
-- episode under that prefix is the payout form of resolve_for_attempt. Only open episodes are
-- scanned (few, and the reminders index covers them); starts_with avoids LIKE's wildcards.
UPDATE payment_escalations
   SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
 WHERE resolved_at IS NULL AND starts_with(escalation_key, %(prefix)s)
RETURNING escalation_id;

-- name: resolve_by_key_prefix_of_payout
-- An expired grant's episode ('payout-grant:<grant_id>:expired-unused') says its payout waits for a
-- fresh decision; the decision (or cancellation) that answers it closes every such episode of the
-- payout in its own transaction. The payout is named in details: grant ids are not known there.
UPDATE payment_escalations
   SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
 WHERE resolved_at IS NULL AND starts_with(escalation_key, %(prefix)s) AND details->>'payout_id' = %(payout_id)s
RETURNING escalation_id;

-- name: list_escalations
-- API.md "Escalations and reminders": open = every unresolved episode, acknowledged or not;
-- acknowledged = acknowledged and unresolved. Keyset-paged by (raised_at, escalation_id) in either
-- order (docs/decisions/0036; gateway/store/keyset.py binds {beyond} and {direction}): the id
-- orders episodes raised at the same instant. `after` keeps its meaning: only ids greater than it.
SELECT escalation_id, escalation_key, reason, attempt_id, raised_at, acknowledged_at,
       reminder_count, resolved_at, details
  FROM payment_escalations
 WHERE escalation_id > %(after)s
   AND (%(escalation_id)s::bigint IS NULL OR escalation_id = %(escalation_id)s::bigint)
   AND (%(state)s = 'all'
        OR (%(state)s = 'open' AND resolved_at IS NULL)
        OR (%(state)s = 'acknowledged' AND resolved_at IS NULL AND acknowledged_at IS NOT NULL)
        OR (%(state)s = 'resolved' AND resolved_at IS NOT NULL))
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (raised_at, escalation_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::bigint))
 ORDER BY raised_at {direction}, escalation_id {direction}
 LIMIT %(limit)s;

-- name: acknowledge
-- The operator's own transaction (seed 004, "Reminders"), conditional on the episode still being
-- open. The first acknowledgement's time is kept; each acknowledgement restarts the schedule on
-- the acknowledged interval, so reminders of a seen episode come at the team's slower pace.
-- Any reminder job that read the old next_reminder_at now fails its conditional claim.
UPDATE payment_escalations
   SET acknowledged_at = COALESCE(acknowledged_at, %(now)s), next_reminder_at = %(next_reminder_at)s
 WHERE escalation_id = %(escalation_id)s AND resolved_at IS NULL
RETURNING escalation_id;

-- name: resolve_open
-- Closes one open episode, named by its id (an operator's resolve) or by its key (the condition
-- ended through another operator action, e.g. a dead-lettered outbox row retried or discarded, in
-- that action's transaction); the other selector is NULL. Closing clears the reminders
-- (ck_escalation_resolved_reminder insists) and never touches the attempt: resolving an
-- escalation alone changes no payment.
UPDATE payment_escalations
   SET resolved_at = %(now)s, next_reminder_at = NULL, resolution_note = %(note)s
 WHERE resolved_at IS NULL
   AND (escalation_id = %(escalation_id)s::bigint OR escalation_key = %(escalation_key)s::text)
RETURNING escalation_id;

-- name: find_state
SELECT escalation_id, resolved_at FROM payment_escalations WHERE escalation_id = %(escalation_id)s;

-- name: due_reminders
-- Open episodes whose reminder is due; the claim below decides who sends each one.
SELECT escalation_id, next_reminder_at
  FROM payment_escalations
 WHERE resolved_at IS NULL AND next_reminder_at <= %(now)s
 ORDER BY next_reminder_at, escalation_id
 LIMIT %(limit)s;

-- name: claim_reminder
-- Seed 004, "Reminders": one conditional transaction per episode. Only the job instance whose
-- update changes the row (next_reminder_at still what it read) sends reminder n; a racing
-- instance, an acknowledgement or a resolution in between makes it match nothing. The next
-- reminder is counted from now, not from the missed time, so a paused job sends one reminder,
-- not a burst: the unacknowledged interval before acknowledgement, the acknowledged one after.
UPDATE payment_escalations
   SET reminder_count = reminder_count + 1,
       next_reminder_at = %(now)s + CASE WHEN acknowledged_at IS NULL
                                         THEN %(reminder_interval)s::interval
                                         ELSE %(acknowledged_interval)s::interval END
 WHERE escalation_id = %(escalation_id)s
   AND resolved_at IS NULL
   AND next_reminder_at = %(read_next_reminder_at)s
RETURNING escalation_id, escalation_key, reason, attempt_id, details, reminder_count;
