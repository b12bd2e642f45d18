-- What an operator reads about payment attempts (API.md "Operations": GET /v1/ops/attempts and
-- GET /v1/ops/attempts/{attempt_id}). Read-only: nothing here locks or changes an attempt.
-- Columns are listed, never `*`: request_body (it carries the payment-method token) and
-- lease_token (the fence a recovery worker presents) are not an operator's business.

-- name: snapshot
-- Under READ COMMITTED each statement sees its own snapshot, so an event committed between reading
-- the row and reading its history would show a history that runs past the row's state.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: attempts
-- One attempt by id, or a page of the attempts in one state or in every state (the selectors that
-- do not apply are NULL), by creation; every state reads payment_attempts_by_created. Keyset-paged by (created_at, attempt_id) in either order (docs/decisions/0036;
-- gateway/store/keyset.py binds {beyond} and {direction}): the id orders rows that share a creation
-- time (one ManualClock instant, a batch), matching payment_attempts_by_state. `after`, the last
-- attempt id of a previous page, starts the page beyond that attempt; one that names no attempt
-- yields an empty page rather than silently restarting from the top.
SELECT attempt_id, order_id, customer_id, attempt_number, provider_account, endpoint, api_version,
       client_reference, idempotency_key, amount_minor, currency, state, provider_status,
       next_action ->> 'type' AS next_action_type, next_action_expires_at, outcome_reason,
       created_at, first_sent_at, escalation_deadline, provider_payment_id, recovery_owner,
       lease_acquired_at, lease_expires_at, next_check_at, version
  FROM payment_attempts
 WHERE (%(attempt_id)s::uuid IS NULL OR attempt_id = %(attempt_id)s::uuid)
   AND (%(state)s::text IS NULL OR state = %(state)s::text)
   AND (%(after)s::uuid IS NULL
        OR (created_at, attempt_id) {beyond} (SELECT created_at, attempt_id FROM payment_attempts
                                               WHERE attempt_id = %(after)s::uuid))
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (created_at, attempt_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::uuid))
 ORDER BY created_at {direction}, attempt_id {direction}
 LIMIT %(limit)s;

-- name: attempt_events
-- The attempt's whole history, oldest first: its own events, plus notifications that were stored
-- unmatched (attempt_id NULL, append-only so never updated) and later attached to it by an
-- operator through notification_applications. The event id breaks ties between events recorded
-- at the same instant, in the order they were written. Event details hold identifiers, statuses
-- and reasons only (schema.sql, payment_attempt_events.detail), so they are shown as stored.
SELECT e.event_id, e.kind, e.occurred_at, e.actor, e.provider_account, e.notification_key, e.detail
  FROM payment_attempt_events e
 WHERE e.attempt_id = %(attempt_id)s
UNION ALL
SELECT e.event_id, e.kind, e.occurred_at, e.actor, e.provider_account, e.notification_key, e.detail
  FROM notification_applications a
  JOIN payment_attempt_events e ON e.event_id = a.notification_event_id
 WHERE a.attempt_id = %(attempt_id)s AND e.attempt_id IS NULL
 ORDER BY occurred_at, event_id;
