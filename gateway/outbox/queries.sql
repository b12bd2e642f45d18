-- Outbox writes. Every row is written in the same transaction as the state change that causes it.

-- name: enqueue
-- ON CONFLICT names its arbiter: a retried cause, or the same effect reached by another route
-- (endpoint, notification, lookup), is a no-op rather than a unique violation.
INSERT INTO outbox_messages (dedup_key, attempt_id, ordering_key, kind, payload, created_at, next_attempt_at)
VALUES (%(dedup_key)s, %(attempt_id)s, %(ordering_key)s, %(kind)s, %(payload)s, %(now)s, %(now)s)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING message_id;

-- name: bound_idle_transaction
-- The dispatcher keeps its claim transaction open while it delivers (docs/decisions/
-- 0005-outbox-claim-holds-row-locks-for-a-bounded-delivery.md). If the process hangs or its
-- machine vanishes, the server ends the transaction after this long, releasing the row locks,
-- so a crashed dispatcher delays its rows by a bounded time and loses none.
SELECT set_config('idle_in_transaction_session_timeout', %(timeout_ms)s, true);

-- name: claim_due
-- Seed 004, "Downstream Work": eligibility comes first, then the claim. A row is eligible when it
-- is due, not finished, and no earlier row with its ordering key is unfinished: pending, backing
-- off, dead-lettered, or locked by another dispatcher right now. The NOT EXISTS reads committed
-- state, in which a predecessor another dispatcher holds is still undispatched, so SKIP LOCKED
-- only ever skips the locked row itself and can never make its successor eligible. A discarded
-- row is finished (an operator's decision). Operator alerts (ordering_key NULL) never wait.
-- The subquery is served by outbox_messages_unfinished_by_order; the outer scan walks
-- outbox_messages_due in this ORDER BY and stops at the LIMIT (docs/decisions/0053).
SELECT m.message_id, m.dedup_key, m.attempt_id, m.ordering_key, m.kind, m.payload, m.delivery_attempts
  FROM outbox_messages m
 WHERE m.dispatched_at IS NULL AND m.dead_lettered_at IS NULL
   AND m.next_attempt_at <= %(now)s
   AND (m.ordering_key IS NULL OR NOT EXISTS (
        SELECT 1
          FROM outbox_messages earlier
         WHERE earlier.ordering_key = m.ordering_key
           AND earlier.message_id < m.message_id
           AND earlier.dispatched_at IS NULL
           AND earlier.discarded_at IS NULL))
 ORDER BY m.next_attempt_at, m.message_id
 LIMIT %(limit)s
   FOR UPDATE OF m SKIP LOCKED;

-- name: mark_dispatched
-- Every row of a batch its sink took, in one statement (docs/decisions/0033). The claim still
-- holds the rows' locks, so nothing else changed them since they were read.
UPDATE outbox_messages
   SET dispatched_at = %(now)s, delivery_attempts = delivery_attempts + 1, last_error = NULL
 WHERE message_id = ANY(%(message_ids)s::bigint[]) AND dispatched_at IS NULL AND dead_lettered_at IS NULL;

-- name: back_off
-- A failed delivery counts, keeps its diagnosis (never the receiver's body or the URL) and
-- waits; until it is delivered it keeps blocking later rows with its ordering key.
UPDATE outbox_messages
   SET delivery_attempts = delivery_attempts + 1, last_error = %(last_error)s,
       next_attempt_at = %(next_attempt_at)s
 WHERE message_id = %(message_id)s AND dispatched_at IS NULL AND dead_lettered_at IS NULL;

-- name: dead_letter
-- Dead-lettered rows are never claimed again and keep blocking their ordering key until an
-- operator retries or discards them: letting a refund through after a lost confirmation is a
-- business decision, not a dispatcher default.
UPDATE outbox_messages
   SET delivery_attempts = delivery_attempts + 1, last_error = %(last_error)s,
       dead_lettered_at = %(now)s
 WHERE message_id = %(message_id)s AND dispatched_at IS NULL AND dead_lettered_at IS NULL;

-- name: list_messages
-- The operator's view (API.md "Operations"). pending: not finished (due, backing off, or
-- waiting behind a predecessor, which blocked_by names); dead: dead-lettered and not discarded;
-- discarded; dispatched. Payloads are not listed. Keyset-paged by (created_at, message_id) in either
-- order (docs/decisions/0036; gateway/store/keyset.py binds {beyond} and {direction}): the id
-- orders rows written at the same instant. `after` keeps its meaning: only ids greater than it.
SELECT m.message_id, m.dedup_key, m.kind, m.attempt_id, m.ordering_key, m.created_at,
       m.delivery_attempts, m.next_attempt_at, m.last_error, m.dispatched_at, m.dead_lettered_at,
       m.discarded_at, m.discarded_by, m.discard_note,
       CASE WHEN m.dispatched_at IS NULL AND m.discarded_at IS NULL THEN (
            SELECT min(earlier.message_id)
              FROM outbox_messages earlier
             WHERE earlier.ordering_key = m.ordering_key
               AND earlier.message_id < m.message_id
               AND earlier.dispatched_at IS NULL
               AND earlier.discarded_at IS NULL) END AS blocked_by
  FROM outbox_messages m
 WHERE m.message_id > %(after)s
   AND (%(message_id)s::bigint IS NULL OR m.message_id = %(message_id)s::bigint)
   AND (%(state)s::text IS NULL
        OR (%(state)s = 'pending' AND m.dispatched_at IS NULL AND m.dead_lettered_at IS NULL)
        OR (%(state)s = 'dead' AND m.dead_lettered_at IS NOT NULL AND m.discarded_at IS NULL)
        OR (%(state)s = 'discarded' AND m.discarded_at IS NOT NULL)
        OR (%(state)s = 'dispatched' AND m.dispatched_at IS NOT NULL))
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (m.created_at, m.message_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::bigint))
 ORDER BY m.created_at {direction}, m.message_id {direction}
 LIMIT %(limit)s;

-- name: lock_message
-- Retry and discard decide from the row as it is under its lock. A row a dispatcher is
-- delivering right now is locked for at most the delivery budget; the operator waits that long.
SELECT message_id, dispatched_at, dead_lettered_at, discarded_at
  FROM outbox_messages
 WHERE message_id = %(message_id)s
   FOR UPDATE;

-- name: retry
-- The operator's retry: the row is due now and starts over with a full failure budget
-- (docs/decisions/0004-...). last_error stays until the next attempt replaces it.
UPDATE outbox_messages
   SET next_attempt_at = %(now)s, delivery_attempts = 0, dead_lettered_at = NULL
 WHERE message_id = %(message_id)s;

-- name: discard
-- Only a dead-lettered row can be discarded; from then on it counts as finished and its
-- successors proceed. Who and why are kept on the row.
UPDATE outbox_messages
   SET discarded_at = %(now)s, discarded_by = %(operator)s, discard_note = %(note)s
 WHERE message_id = %(message_id)s;
