-- What /metrics reads from the database, the fleet-wide truth (attempts and refund attempts by
-- state, orders paid after their cancellation, outbox backlog, open escalations, process liveness,
-- grants that expired unused or are due and unclaimed; the attempt pipeline's
-- attempts in flight, Unknown attempts by age, the reconciler's backlog, outbox lag and dead
-- letters per message kind, open escalations per reason). Every label value is a state, a kind
-- or a reason code the code writes, never an id; each statement reads a partial index or a small
-- table, not the history.

-- name: database_gauges
-- One statement, one round trip: every gauge the database knows, as (name, labels, value) rows.
SELECT 'paygate_payment_attempts' AS name, jsonb_build_object('state', state) AS labels,
       count(*)::float8 AS value
  FROM payment_attempts GROUP BY state
UNION ALL
SELECT 'paygate_outbox_messages', jsonb_build_object('state', CASE
           WHEN dispatched_at IS NOT NULL THEN 'dispatched'
           WHEN dead_lettered_at IS NOT NULL THEN 'dead' ELSE 'pending' END), count(*)
  FROM outbox_messages GROUP BY 2
UNION ALL
SELECT 'paygate_payment_refund_attempts', jsonb_build_object('state', state), count(*)
  FROM payment_refund_attempts GROUP BY state
UNION ALL
SELECT 'paygate_orders_paid_after_cancel', '{}', count(*) FROM orders WHERE state = 'PaidAfterCancel'
UNION ALL
SELECT 'paygate_open_escalations', '{}', count(*) FROM payment_escalations WHERE resolved_at IS NULL
UNION ALL
SELECT 'paygate_process_last_seen_age_seconds', jsonb_build_object('kind', kind),
       min(extract(epoch FROM (%(now)s - seen_at)))::float8
  FROM process_heartbeats GROUP BY kind

-- name: grant_gauges
-- Seed 000 section 21, "Grants issued but never consumed" (docs/decisions/0023):
-- grants whose window closed unclaimed, and grants due now that nobody has claimed yet (a backlog,
-- or lost jobs the redelivery sweep is publishing again). One label: the grant's operation.
-- The VALUES are the registered granted kinds' operations, the joined unions the
-- kind_grants_expired and kind_grants_due blocks composed for each (gateway.store.gauges), so
-- every operation has a row, zero included.
SELECT 'paygate_payout_grants_expired_unused' AS name, jsonb_build_object('operation', g.operation) AS labels,
       count(x.*)::float8 AS value
  FROM (VALUES {operations}) AS g (operation)
  LEFT JOIN ({expired}) AS x ON x.operation = g.operation
 GROUP BY g.operation
UNION ALL
SELECT 'paygate_payout_grants_due_unclaimed', jsonb_build_object('operation', g.operation), count(x.*)
  FROM (VALUES {operations}) AS g (operation)
  LEFT JOIN ({due}) AS x ON x.operation = g.operation
 GROUP BY g.operation

-- name: kind_grants_expired
-- One granted kind's grants whose window closed unclaimed ({grants} its table, {operation} its
-- grants' operation).
SELECT {operation}::text AS operation FROM {grants} WHERE state = 'Expired'

-- name: kind_grants_due
-- One granted kind's grants due now and not claimed yet.
SELECT {operation}::text AS operation FROM {grants}
 WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s

-- name: kind_pipeline_gauges
-- One kind of the attempt pipeline, composed for every registered pipeline kind
-- (gateway.domain.attempt_kinds; {kind} its name, {attempts} its table): attempts in flight by
-- state (the one-unresolved partial indexes), and the reconciler's backlog: how long the most
-- overdue check has been due (the checks-due partial indexes; 0 when nothing is due). Every kind
-- and state has a row, zero included, so an alert never meets a missing series.
SELECT 'paygate_payout_attempts_in_flight' AS name, jsonb_build_object('kind', {kind}::text, 'state', s.state) AS labels,
       COALESCE(f.value, 0)::float8 AS value
  FROM (VALUES ('Claimed'), ('Started'), ('Unknown')) AS s (state)
  LEFT JOIN (SELECT state, count(*) AS value FROM {attempts}
              WHERE state IN ('Claimed', 'Started', 'Unknown') GROUP BY state) f ON f.state = s.state
UNION ALL
SELECT 'paygate_payout_reconciliation_backlog_seconds', jsonb_build_object('kind', {kind}::text),
       COALESCE(GREATEST(extract(epoch FROM (%(now)s - min(next_check_at))), 0), 0)::float8
  FROM {attempts}
 WHERE state IN ('Started', 'Unknown') AND next_check_at IS NOT NULL AND next_check_at <= %(now)s

-- name: kind_unknown_ages
-- Seed 000 section 21, "Unknown attempts by age. The most important payout metric in this design":
-- a histogram of one kind's attempts Unknown now, by seconds since {sent_at} (the Started write;
-- checkout: first_sent_at), cumulative per bucket bound; composed for every registered kind.
-- %(bounds)s ends with Infinity (the +Inf bucket); %(le)s are the bounds as exposed. A snapshot,
-- not a running count: it falls when attempts settle.
SELECT {kind}::text AS series, b.bound, b.le, count(u.age) FILTER (WHERE u.age <= b.bound)::float8 AS value,
       COALESCE(sum(u.age) FILTER (WHERE b.bound = 'Infinity'), 0)::float8 AS age_sum
  FROM unnest(%(bounds)s::float8[], %(le)s::text[]) AS b (bound, le)
  LEFT JOIN (SELECT extract(epoch FROM (%(now)s - {sent_at}))::float8 AS age
               FROM {attempts} WHERE state = 'Unknown') u ON true
 GROUP BY b.bound, b.le

-- name: kind_unknown_oldest
-- The Overview (GET /v1/ops/overview): one kind's attempts Unknown now and since when the oldest
-- one's send began ({sent_at}); composed for every registered kind. Unknown rows are few and
-- indexed (payment_attempts_by_state; the pipeline's one-unresolved partial indexes).
SELECT {kind}::text AS kind, count(*)::int AS unknown, min({sent_at}) AS oldest
  FROM {attempts} WHERE state = 'Unknown'

-- name: outbox_kinds
-- Per message kind: undelivered rows and the age of the oldest (outbox lag; the pending partial
-- index), and dead letters nobody has retried or discarded (outbox_messages_dead).
SELECT kind, count(*)::float8 AS pending, extract(epoch FROM (%(now)s - min(created_at)))::float8 AS lag,
       0::float8 AS dead
  FROM outbox_messages WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL GROUP BY kind
UNION ALL
SELECT kind, 0, 0, count(*)
  FROM outbox_messages WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL GROUP BY kind;

-- name: open_escalations
-- Open episodes per reason (one_open_escalation_per_key covers them), with the oldest one's age.
-- ``kind`` names the attempt-pipeline kind the episode belongs to: the CASE has one WHEN per
-- registered kind with an escalation family, most specific key prefix first
-- (gateway.store.gauges.open_escalations; the key prefixes its raisers use:
-- gateway.effects.ledger, gateway.payouts.grant_sweep, gateway.domain.refunds); NULL for
-- checkout, outbox and notification episodes.
SELECT reason, CASE {kind_of} END AS kind,
       count(*)::float8 AS open, extract(epoch FROM (%(now)s - min(raised_at)))::float8 AS oldest
  FROM payment_escalations WHERE resolved_at IS NULL GROUP BY 1, 2;
