-- What an operator reads about refunds of paid orders (docs/decisions/0019).
-- Read-only: nothing here locks or changes a refund.

-- name: snapshot
-- One snapshot for an order's refunds and their history, so the history never runs past them.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: refunds
-- A page of refunds, one row per refund grant (an Allowed refund decision), in the state
-- gateway/refunds/views.py summarises: the attempt's own state once claimed, else Requested, or
-- Expired for a grant that lapsed unclaimed. `state` 'all' lists every one. Keyset-paged by
-- (requested_at, grant_id) in either order (docs/decisions/0036): when the refund was decided.
WITH refunds AS (
    SELECT g.grant_id, g.order_id, g.refund_number, g.state AS grant_state, g.provider_payment_id, g.not_before,
           g.expires_at, d.decision_id, d.cause, d.actor_id AS requested_by, d.observed_at AS requested_at,
           o.merchant_id, o.amount_minor, o.currency, o.state AS order_state, o.provider_account,
           a.attempt_id, a.client_reference, a.provider_refund_id, a.provider_status, a.outcome_reason,
           a.claimed_at, a.started_at, a.sends, a.checks, a.next_check_at, a.escalation_deadline, a.resolved_at,
           COALESCE(a.state, CASE WHEN g.state = 'Expired' THEN 'Expired' ELSE 'Requested' END) AS state
      FROM payment_refund_grants g
      JOIN payment_refund_decisions d ON d.decision_id = g.decision_id
      JOIN orders o ON o.order_id = g.order_id
      LEFT JOIN payment_refund_attempts a ON a.grant_id = g.grant_id
)
SELECT * FROM refunds
 WHERE (%(state)s = 'all' OR state = %(state)s)
   AND (%(cursor_at)s::timestamptz IS NULL
        OR (requested_at, grant_id) {beyond} (%(cursor_at)s::timestamptz, %(cursor_id)s::uuid))
 ORDER BY requested_at {direction}, grant_id {direction}
 LIMIT %(limit)s;

-- name: order_of_refunds
-- The order as the operator needs it beside its refunds: never its payment method.
SELECT order_id, merchant_id, customer_id, amount_minor, currency, provider_account, state, created_at, updated_at,
       version
  FROM orders WHERE order_id = %(order_id)s;
