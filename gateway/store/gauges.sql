-- What /metrics reads from the database, the fleet-wide truth (attempts and refund attempts by
-- state, orders paid after their cancellation, outbox backlog, open escalations, process liveness,
-- grants that expired unused or are due and unclaimed).

-- name: database_gauges
-- One statement, one round trip: every gauge the database knows, as (name, labels, value) rows.
SELECT 'paygate_payment_attempts' AS name, 'state="' || state || '"' AS labels, count(*)::float8 AS value
  FROM payment_attempts GROUP BY state
UNION ALL
SELECT 'paygate_outbox_messages', 'state="' || CASE
           WHEN dispatched_at IS NOT NULL THEN 'dispatched'
           WHEN dead_lettered_at IS NOT NULL THEN 'dead' ELSE 'pending' END || '"', count(*)
  FROM outbox_messages GROUP BY 2
UNION ALL
SELECT 'paygate_payment_refund_attempts', 'state="' || state || '"', count(*)
  FROM payment_refund_attempts GROUP BY state
UNION ALL
SELECT 'paygate_orders_paid_after_cancel', '', count(*) FROM orders WHERE state = 'PaidAfterCancel'
UNION ALL
SELECT 'paygate_open_escalations', '', count(*) FROM payment_escalations WHERE resolved_at IS NULL
UNION ALL
SELECT 'paygate_process_last_seen_age_seconds', 'kind="' || kind || '"',
       min(extract(epoch FROM (%(now)s - seen_at)))::float8
  FROM process_heartbeats GROUP BY kind
UNION ALL
-- Seed 000 section 21, "Grants issued but never consumed" (issue 11 item 1, docs/decisions/0023):
-- grants whose window closed unclaimed, and grants due now that nobody has claimed yet (a backlog,
-- or lost jobs the redelivery sweep is publishing again). One label, two values: the operation.
SELECT 'paygate_payout_grants_expired_unused', 'operation="payout.submit"', count(*)
  FROM payout_grants WHERE state = 'Expired'
UNION ALL
SELECT 'paygate_payout_grants_expired_unused', 'operation="payout.recall"', count(*)
  FROM payout_recall_grants WHERE state = 'Expired'
UNION ALL
SELECT 'paygate_payout_grants_due_unclaimed', 'operation="payout.submit"', count(*)
  FROM payout_grants WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s
UNION ALL
SELECT 'paygate_payout_grants_due_unclaimed', 'operation="payout.recall"', count(*)
  FROM payout_recall_grants WHERE state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s;
