-- One attempt per provider object, for payouts, recalls and refunds as for checkout attempts
-- (issue 21 item 5; seed 004, "Persisting the Attempt": the partial unique index "makes the ID
-- unique across attempts within its account, so a lookup or notification by provider ID finds at
-- most one attempt"; a write of an id another attempt owns "fails" and the application "keeps both
-- attempts exactly as they are" and escalates). Each index is partial (the id is NULL until the
-- first evidence carries it) and named: gateway/pipeline/rows.py translates its violation, by that
-- name, into a mismatch escalation.
--
-- Existing data cannot violate it: each attempt has its own client reference and idempotency key,
-- so CardCo and Stripe create one object per attempt, and ids were recorded from the answer to the
-- attempt's own key or a lookup by its own reference. Should a database hold a duplicate all the
-- same, this migration fails and applies nothing; find it with, per table,
--   SELECT provider_account, provider_payout_id, array_agg(attempt_id) FROM payout_attempts
--    WHERE provider_payout_id IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1;
-- and have payments operations decide whose object it is. Backward compatible: the previous release
-- records ids the same way. IF NOT EXISTS: on large attempt tables, build each CONCURRENTLY by hand
-- before deploying (docs/migrations.md; `paygate db check` reports one that failed as INVALID).

CREATE UNIQUE INDEX IF NOT EXISTS one_payout_attempt_per_provider_payout
    ON payout_attempts (provider_account, provider_payout_id)
    WHERE provider_payout_id IS NOT NULL;

CREATE UNIQUE INDEX IF NOT EXISTS one_recall_attempt_per_provider_recall
    ON payout_recall_attempts (provider_account, provider_recall_id)
    WHERE provider_recall_id IS NOT NULL;

CREATE UNIQUE INDEX IF NOT EXISTS one_refund_attempt_per_provider_refund
    ON payment_refund_attempts (provider_account, provider_refund_id)
    WHERE provider_refund_id IS NOT NULL;
