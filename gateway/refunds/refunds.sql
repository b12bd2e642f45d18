-- Refunds (docs/decisions/0019; seed 000 section 17): their own decisions, grants and attempts.
-- Lock order: the order row (callers hold it), then the order's payment_refunds row, then grants,
-- attempts, history and outbox rows. The paid payment attempt is read, never written.

-- name: ensure_refund_row
INSERT INTO payment_refunds (order_id, created_at, updated_at) VALUES (%(order_id)s, %(now)s, %(now)s)
ON CONFLICT (order_id) DO NOTHING;

-- name: lock_refund_row
-- Refund numbers are allocated under this lock by the decision, never by the worker.
SELECT * FROM payment_refunds WHERE order_id = %(order_id)s FOR UPDATE;

-- name: allocate_refund
UPDATE payment_refunds SET refunds_allocated = refunds_allocated + 1, updated_at = %(now)s
 WHERE order_id = %(order_id)s
RETURNING refunds_allocated;

-- name: lock_order
SELECT * FROM orders WHERE order_id = %(order_id)s FOR NO KEY UPDATE;

-- name: refund_context
-- Everything a decision depends on, read under the order and refund-row locks: the succeeded
-- payment attempt (a paid order has exactly one), whether a refund might still take effect
-- (an Issued grant still inside its window, or an attempt Claimed, Started or Unknown), and
-- whether one already did.
SELECT (SELECT attempt_id FROM payment_attempts
         WHERE order_id = %(order_id)s AND state = 'Succeeded') AS paid_attempt_id,
       (SELECT provider_payment_id FROM payment_attempts
         WHERE order_id = %(order_id)s AND state = 'Succeeded') AS provider_payment_id,
       (SELECT provider_account FROM payment_attempts
         WHERE order_id = %(order_id)s AND state = 'Succeeded') AS provider_account,
       EXISTS (SELECT 1 FROM payment_refund_attempts
                WHERE order_id = %(order_id)s AND state IN ('Claimed', 'Started', 'Unknown'))
       OR EXISTS (SELECT 1 FROM payment_refund_grants
                   WHERE order_id = %(order_id)s AND state = 'Issued' AND expires_at > %(now)s) AS unresolved,
       EXISTS (SELECT 1 FROM payment_refund_attempts
                WHERE order_id = %(order_id)s AND state = 'Succeeded') AS refunded;

-- name: expire_lapsed_grants_of_order
UPDATE payment_refund_grants
   SET state = 'Expired', expired_at = %(now)s
 WHERE order_id = %(order_id)s AND state = 'Issued' AND expires_at <= %(now)s
RETURNING grant_id;

-- name: insert_decision
INSERT INTO payment_refund_decisions (decision_id, order_id, cause, outcome, reason, policy_version, actor_id,
                                      evaluated_order_version, paid_attempt_id, provider_payment_id, observed_at,
                                      correlation_id)
VALUES (%(decision_id)s, %(order_id)s, %(cause)s, %(outcome)s, %(reason)s, %(policy_version)s, %(actor_id)s,
        %(evaluated_order_version)s, %(paid_attempt_id)s, %(provider_payment_id)s, %(now)s, %(correlation_id)s)
RETURNING *;

-- name: insert_grant
INSERT INTO payment_refund_grants (grant_id, decision_id, order_id, merchant_id, audience, refund_number,
                                   provider_payment_id, policy_version, not_before, expires_at, state)
VALUES (%(grant_id)s, %(decision_id)s, %(order_id)s, %(merchant_id)s, %(audience)s, %(refund_number)s,
        %(provider_payment_id)s, %(policy_version)s, %(not_before)s, %(expires_at)s, 'Issued')
RETURNING *;

-- name: append_history
INSERT INTO payment_refund_history (order_id, attempt_id, decision_id, grant_id, kind, occurred_at, actor,
                                    correlation_id, detail)
VALUES (%(order_id)s, %(attempt_id)s, %(decision_id)s, %(grant_id)s, %(kind)s, %(now)s, %(actor)s,
        %(correlation_id)s, %(detail)s);

-- name: decisions_of_order
SELECT * FROM payment_refund_decisions WHERE order_id = %(order_id)s ORDER BY position;

-- name: grants_of_order
SELECT * FROM payment_refund_grants WHERE order_id = %(order_id)s ORDER BY refund_number;

-- name: attempts_of_order
SELECT * FROM payment_refund_attempts WHERE order_id = %(order_id)s ORDER BY refund_number;

-- name: history_of_order
SELECT * FROM payment_refund_history WHERE order_id = %(order_id)s ORDER BY event_id;

-- name: lock_order_of_refund
-- The order a refund attempt refunds, locked after the attempt (the order every resolving writer
-- follows: attempt, then its parent), with the paid payment attempt and the cause its decision named.
SELECT o.*, d.paid_attempt_id, d.cause
  FROM orders o JOIN payment_refund_decisions d ON d.order_id = o.order_id
 WHERE d.decision_id = %(decision_id)s
   FOR NO KEY UPDATE OF o;

-- name: settle_order
-- Paid or PaidAfterCancel -> Refunded, in the transaction that resolved the refund Succeeded.
UPDATE orders SET state = %(state)s, updated_at = %(now)s, version = version + 1
 WHERE order_id = %(order_id)s AND state IN ('Paid', 'PaidAfterCancel');

-- name: owed_refunds
-- One page of the refunds owed: cancelled orders whose payment succeeded with no
-- refund under way (no Issued grant inside its window, no attempt Claimed, Started, Unknown or
-- Succeeded) and no refund-owed episode open yet, after the cursor (:after_at, :after_id) in
-- (updated_at, order_id) order, which orders_paid_after_cancel walks. The whole question is asked
-- here, before the LIMIT: orders with a refund under way never fill a page and hide an owed one
-- behind them. Locked, skipping orders another writer holds: that writer decides first (a skipped
-- order is asked again by the next sweep).
SELECT o.order_id, o.updated_at,
       (SELECT a.attempt_id FROM payment_attempts a
         WHERE a.order_id = o.order_id AND a.state = 'Succeeded') AS paid_attempt_id
  FROM orders o
 WHERE o.state = 'PaidAfterCancel'
   AND (o.updated_at, o.order_id) > (%(after_at)s::timestamptz, %(after_id)s::text)
   AND NOT EXISTS (SELECT 1 FROM payment_refund_attempts r
                    WHERE r.order_id = o.order_id AND r.state IN ('Claimed', 'Started', 'Unknown', 'Succeeded'))
   AND NOT EXISTS (SELECT 1 FROM payment_refund_grants g
                    WHERE g.order_id = o.order_id AND g.state = 'Issued' AND g.expires_at > %(now)s)
   AND NOT EXISTS (SELECT 1 FROM payment_escalations e
                    WHERE e.escalation_key = 'order:' || o.order_id || ':refund-owed' AND e.resolved_at IS NULL)
 ORDER BY o.updated_at, o.order_id
 LIMIT %(limit)s
   FOR NO KEY UPDATE OF o SKIP LOCKED;

-- name: order_to_refund
-- What the executor checks before its claim: the order is still paid, and the account of its paid
-- payment attempt (CardCo scopes the payment to it: the refund is sent there, never elsewhere).
SELECT o.order_id, o.state, o.amount_minor, o.currency, a.provider_account, a.provider_payment_id
  FROM orders o LEFT JOIN payment_attempts a ON a.order_id = o.order_id AND a.state = 'Succeeded'
 WHERE o.order_id = %(order_id)s;

-- name: lock_refundable_order
-- The claim re-asserts what validation relied on (seed 000, "Atomically Claim the Grant and the
-- Payout"): the order is still refundable, read under its row lock, taken before
-- the grant and the attempt as every writer of an order's refunds does (this file's lock order,
-- docs/decisions/0001). No row: the claim consumes nothing and inserts nothing.
SELECT order_id FROM orders
 WHERE order_id = %(order_id)s AND state = ANY(%(refundable)s::text[])
   FOR NO KEY UPDATE;

-- name: insert_attempt
INSERT INTO payment_refund_attempts (attempt_id, order_id, grant_id, decision_id, refund_number, provider_account,
                                     provider_payment_id, client_reference, idempotency_key, amount_minor, currency,
                                     state, claimed_by, claimed_at, send_deadline, lease_expires_at,
                                     escalation_deadline)
VALUES (%(attempt_id)s, %(order_id)s, %(grant_id)s, %(decision_id)s, %(refund_number)s, %(provider_account)s,
        %(provider_payment_id)s, %(client_reference)s, %(idempotency_key)s, %(amount_minor)s, %(currency)s,
        'Claimed', %(worker_id)s, %(now)s, %(send_deadline)s, %(lease_expires_at)s, %(escalation_deadline)s)
RETURNING *;

-- name: refund_governance
-- What a refund attempt's effect record commits to besides its request: its own Allowed decision.
SELECT * FROM payment_refund_decisions WHERE decision_id = %(decision_id)s;

-- name: effect_evidence
-- A refund attempt's evidence: its provider observations and reconciliations (docs/decisions/0019),
-- which its certificate cites.
SELECT event_id FROM payment_refund_history
 WHERE attempt_id = %(attempt_id)s AND kind IN ('provider_observation', 'reconciliation')
 ORDER BY event_id;

-- name: expire_unused_grants
-- Grants whose window closed unclaimed (their job was lost or kept being refused) are Expired by
-- the refund sweep, not only by the order's next decision, so nothing shows a dead grant as a
-- refund still "Requested". SKIP LOCKED: several sweepers share the batch. Each comes back with
-- its cause and its order's state now (an order still paid means the refund was not done).
WITH expired AS (
    UPDATE payment_refund_grants g
       SET state = 'Expired', expired_at = %(now)s
     WHERE g.grant_id IN (SELECT grant_id FROM payment_refund_grants
                           WHERE state = 'Issued' AND expires_at <= %(now)s
                           ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING g.grant_id, g.order_id, g.decision_id, g.refund_number)
SELECT e.grant_id, e.order_id, e.refund_number, o.state AS order_state, d.cause, d.paid_attempt_id
  FROM expired e
  JOIN orders o ON o.order_id = e.order_id
  JOIN payment_refund_decisions d ON d.decision_id = e.decision_id;
