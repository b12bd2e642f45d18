-- Orders. Every writer that touches an order and its attempts locks the order row first.

-- name: insert
-- A repeat of the same order_id is not an error here: the caller compares the stored terms.
INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method,
                    return_url, provider_account, state, created_at, updated_at)
VALUES (%(order_id)s, %(merchant_id)s, %(customer_id)s, %(amount_minor)s, %(currency)s, %(payment_method)s,
        %(return_url)s, %(provider_account)s, 'Open', %(now)s, %(now)s)
ON CONFLICT (order_id) DO NOTHING
RETURNING *;

-- name: get
SELECT * FROM orders WHERE order_id = %(order_id)s;

-- name: get_owned
-- The order if the caller owns it in its role: its merchant's subject for 'merchant', its
-- customer's for 'customer', nobody for any other role. Another's order is no row, answered
-- exactly like an unknown one (API.md, Orders and checkout: never reveal that it exists).
SELECT * FROM orders
 WHERE order_id = %(order_id)s
   AND CASE %(role)s::text WHEN 'merchant' THEN merchant_id WHEN 'customer' THEN customer_id END = %(subject)s;

-- name: lock
-- FOR NO KEY UPDATE, not FOR UPDATE: it serializes writers of this order without blocking the
-- FOR KEY SHARE locks that inserting attempts (foreign keys) take.
SELECT * FROM orders WHERE order_id = %(order_id)s FOR NO KEY UPDATE;

-- name: has_live_attempt
SELECT EXISTS (SELECT 1 FROM payment_attempts
                WHERE order_id = %(order_id)s AND state IN ('NotStarted', 'Started', 'Unknown')) AS live;

-- name: set_state
UPDATE orders SET state = %(state)s, updated_at = %(now)s, version = version + 1
 WHERE order_id = %(order_id)s
RETURNING *;

-- name: certificate_attempt
-- The order's succeeded attempt (at most one: a paid order gets no other attempt), if the caller
-- owns the order in its role (as get_owned); no row for everyone else.
SELECT a.attempt_id
  FROM orders o LEFT JOIN payment_attempts a ON a.order_id = o.order_id AND a.state = 'Succeeded'
 WHERE o.order_id = %(order_id)s
   AND CASE %(role)s::text WHEN 'merchant' THEN o.merchant_id WHEN 'customer' THEN o.customer_id END = %(subject)s
 ORDER BY a.attempt_number DESC NULLS LAST LIMIT 1;
