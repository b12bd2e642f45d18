"""Stripe's versioned classification tables for the pipeline's kinds, payouts and refunds (seed
000, "Classify the Outcome by What the Provider Can Prove"; "Production Adaptation": an explicit,
versioned classification table per provider, with recorded test vectors in
tests/unit/test_stripe_responses.py; docs/decisions/0047). A payout recall has none: Stripe has no
operation paygate can use for it. The rows every provider shares and the classification are
gateway.domain.outcomes. Pure.
"""

from __future__ import annotations

from gateway.domain.outcomes import AttemptState, Row, StatusTable
from gateway.providers.stripe.answers import record

# Errors of a payout or refund create, by (HTTP status, Stripe error code, else its type).
ERROR_ROWS: dict[tuple[int, str], Row] = {
    (400, "idempotency_error"): Row(AttemptState.UNKNOWN, "provider.idempotency-key-in-use",
                                    "this request did nothing, but the key already carries another request's "
                                    "parameters: reconcile"),
    (409, "idempotency_key_in_use"): Row(AttemptState.UNKNOWN, "provider.idempotency-key-in-flight",
                                         "a request under the same key is still executing: reconcile"),
    (429, "rate_limit"): Row(AttemptState.STARTED, "provider.rate-limited",
                             "rate limiters run before the idempotency layer: no effect, transient; same-key "
                             "resend before the send deadline", resend=True),
    # API versions before 2015-09-08 answered a rate limit 400 with this code (answers.rate_limited).
    (400, "rate_limit"): Row(AttemptState.STARTED, "provider.rate-limited",
                             "a legacy 400 rate limit: as a 429, no effect, transient; same-key resend before the "
                             "send deadline", resend=True),
    (400, "invalid_request_error"): Row(AttemptState.FAILED, "provider.invalid-request",
                                        "validation refused the request (e.g. balance_insufficient): no effect"),
}

PAYOUT_TABLE = StatusTable("stripe-payouts/2025-09-30.1", {
    "pending": Row(AttemptState.STARTED, "provider.accepted", "created, not yet submitted to the bank"),
    "in_transit": Row(AttemptState.STARTED, "provider.accepted", "submitted to the bank, not yet paid"),
    "paid": Row(AttemptState.SUCCEEDED, "provider.paid",
                "expected in the bank account; a later failure is a later event, escalated as a contradiction"),
    "failed": Row(AttemptState.FAILED, "provider.failed", "the payout failed (failure_code): the funds returned"),
    "canceled": Row(AttemptState.FAILED, "provider.canceled", "canceled before it was submitted: no effect"),
}, ERROR_ROWS, record)

REFUND_TABLE = StatusTable("stripe-refunds/2025-09-30.1", {
    "pending": Row(AttemptState.STARTED, "provider.accepted", "accepted, not yet completed"),
    "requires_action": Row(AttemptState.STARTED, "provider.accepted", "waiting for the customer's details"),
    "succeeded": Row(AttemptState.SUCCEEDED, "provider.refunded", "the refund took effect"),
    "failed": Row(AttemptState.FAILED, "provider.failed", "the refund failed (failure_reason): no effect"),
    "canceled": Row(AttemptState.FAILED, "provider.canceled", "canceled: no effect"),
}, ERROR_ROWS, lambda document: record(document, payment=document.get("payment_intent")))
