-- What a PaymentStatus answer carries besides the attempt (gateway/payments/status.py).

-- name: status_extensions
-- The attempt's seed 001 effect (its record and the protocol state of its last ledger row, as
-- effects_of in gateway/effects/queries.sql) and the order's latest refund (its latest grant, the
-- grant's decision and the grant's attempt once claimed), in one statement: one
-- round trip where a transaction of five reads took six. Always one row; NULLs where
-- there is no record or no refund.
SELECT r.effect_digest, r.idempotency_key, l.to_state AS protocol_state,
       g.grant_id, g.refund_number, g.state AS grant_state, d.decision_id, d.cause,
       ra.attempt_id AS refund_attempt_id, ra.state AS refund_state, ra.client_reference AS refund_client_reference,
       ra.provider_refund_id, ra.outcome_reason AS refund_outcome_reason
  FROM (SELECT 1) AS one
  LEFT JOIN effect_records r ON r.attempt_id = %(attempt_id)s
  LEFT JOIN LATERAL (SELECT to_state FROM effect_ledger e
                      WHERE e.attempt_id = r.attempt_id ORDER BY sequence DESC LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT * FROM payment_refund_grants
                      WHERE order_id = %(order_id)s ORDER BY refund_number DESC LIMIT 1) g ON true
  LEFT JOIN payment_refund_decisions d ON d.decision_id = g.decision_id
  LEFT JOIN payment_refund_attempts ra ON ra.grant_id = g.grant_id;
