-- Counters and histogram buckets summed over every process (docs/decisions/0041).

-- name: add_counts
-- One statement per flush: this process's deltas since its last flush, added to the fleet's sums.
-- Rows are upserted in (name, labels) order, so two processes flushing the same series at once
-- lock them in the same order and never deadlock; each row lock is held for this statement only.
INSERT INTO metric_counters AS m (name, labels, value)
SELECT name, labels, value
  FROM unnest(%(names)s::text[], %(labels)s::jsonb[], %(values)s::float8[]) WITH ORDINALITY
       AS d (name, labels, value, position)
 ORDER BY position
ON CONFLICT (name, labels) DO UPDATE SET value = m.value + EXCLUDED.value;

-- name: all_counts
-- What /metrics exposes: one row per series, a handful of rows per family (labels are bounded).
SELECT name, labels, value FROM metric_counters;
