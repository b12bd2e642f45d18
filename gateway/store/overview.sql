-- The operator's Overview (GET /v1/ops/overview): the system at a glance, one read model
-- over the tables /metrics reads too (gauges.sql: kind_unknown_oldest, outbox_kinds and
-- open_escalations are read from there). Every statement reads a partial index, a bounded index
-- range or a small table, never the payment history: measured with EXPLAIN in
-- tests/integration/test_ops_overview.py.

-- name: attempts_per_minute
-- Checkout attempts started (their first send intent) and settled (a transition into Succeeded,
-- Failed, NotApplied or Unknown) per minute of the last hour, from the events by when they happened
-- (payment_attempt_events_recent). A minute nothing happened in has no row; the caller fills it.
SELECT date_trunc('minute', occurred_at) AS minute,
       count(*) FILTER (WHERE kind = 'send_intent' AND detail ->> 'send' = 'first')::int AS started,
       count(*) FILTER (WHERE kind = 'transition' AND detail ->> 'to' = 'Succeeded')::int AS succeeded,
       count(*) FILTER (WHERE kind = 'transition' AND detail ->> 'to' = 'Failed')::int AS failed,
       count(*) FILTER (WHERE kind = 'transition' AND detail ->> 'to' = 'NotApplied')::int AS not_applied,
       count(*) FILTER (WHERE kind = 'transition' AND detail ->> 'to' = 'Unknown')::int AS unknown
  FROM payment_attempt_events
 WHERE kind IN ('send_intent', 'transition')
   AND occurred_at > %(since)s AND occurred_at <= %(now)s
 GROUP BY 1
 ORDER BY 1;

-- name: payouts_by_state
-- Payouts per state: one index-only pass over payouts_by_state (state, created_at, payout_id).
SELECT state, count(*)::int AS payouts FROM payouts GROUP BY state ORDER BY state;

-- name: lookup_levels
-- Each configured account's lookup bucket as it stands now (ratelimits.sql take_tokens' refill,
-- without taking: tokens + rate x elapsed, up to the burst; full when never used), and its pause.
SELECT a.scope, LEAST(a.burst, COALESCE(b.tokens + a.rate * GREATEST(0, extract(epoch FROM %(now)s - b.refilled_at)),
                                        a.burst))::float8 AS tokens,
       p.paused_until, p.reason AS pause_reason
  FROM unnest(%(scopes)s::text[], %(rates)s::numeric[], %(bursts)s::numeric[]) AS a (scope, rate, burst)
  LEFT JOIN provider_lookup_buckets b ON b.scope = a.scope
  LEFT JOIN provider_pauses p ON p.scope = a.scope AND p.paused_until > %(now)s;

-- name: account_calls
-- The fleet's provider calls per account (docs/decisions/0041, 0063): the cumulative buckets and
-- counts of paygate_provider_call_seconds, a primary-key range of metric_counters.
SELECT name, labels, value FROM metric_counters
 WHERE name IN ('paygate_provider_call_seconds_bucket', 'paygate_provider_call_seconds_count');
