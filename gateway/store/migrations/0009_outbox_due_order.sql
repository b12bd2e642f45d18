-- The outbox claim's own order (issue 13, docs/decisions/0053): the dispatcher claims pending rows
-- by (next_attempt_at, message_id), which the pending index (next_attempt_at, created_at) could
-- not give, so every claim read and tested every pending row (the "no unfinished earlier row"
-- subquery once per row) and sorted them, to return 50: 48 ms for a backlog of 10,000 rows. This
-- index walks them in that order and stops at the claim's LIMIT (0.4 ms), and replaces the pending
-- index, which served nothing else (the lag gauge reads the same pending rows through this one), so
-- an outbox insert still maintains the same number of indexes. Backward compatible: indexes
-- change no statement's meaning. IF NOT EXISTS: on a large outbox, build it CONCURRENTLY by hand
-- before deploying (docs/migrations.md), and this migration only records it.

CREATE INDEX IF NOT EXISTS outbox_messages_due
    ON outbox_messages (next_attempt_at, message_id)
    WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL;

DROP INDEX outbox_messages_pending;
