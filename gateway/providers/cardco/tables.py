"""CardCo's versioned classification tables for the pipeline's kinds (seed 000, "Classify the
Outcome by What the Provider Can Prove"; "Production Adaptation": an explicit, versioned
classification table per provider, with recorded test vectors for each row, in
tests/unit/test_payout_outcomes.py and tests/unit/test_refund_rules.py). Every row names CardCo's
documented meaning (API.md, "provider_fake: CardCo"); the rows every provider shares (no response,
malformed, undocumented, mismatch) and the classification are gateway.domain.outcomes. Pure.
"""

from __future__ import annotations

from gateway.domain.outcomes import AttemptState, Row, StatusTable

PAYOUT_TABLE_VERSION = "cardco-payouts/2026-11-01.1"
RECALL_TABLE_VERSION = "cardco-payout-recalls/2026-11-29.1"
REFUND_TABLE_VERSION = "cardco-refunds/2026-12-01.1"

# Error responses, by (HTTP status, CardCo error code): the same for every kind.
ERROR_ROWS: dict[tuple[int, str], Row] = {
    (400, "request_expired"): Row(AttemptState.NOT_APPLIED, "provider.request-expired",
                                  "received after expires_at plus skew: no effect; a saved result under this "
                                  "key would have been returned instead, and no later request can take effect"),
    (400, "invalid_request"): Row(AttemptState.FAILED, "provider.invalid-request",
                                  "documented no-effect; the same parameters fail the same way"),
    (409, "idempotency_key_in_use"): Row(AttemptState.UNKNOWN, "provider.idempotency-key-in-use",
                                         "this request did nothing, but the key already carries another "
                                         "request's effect: reconcile"),
    (429, "rate_limited"): Row(AttemptState.STARTED, "provider.rate-limited",
                               "documented no-effect and transient: same-key resend before the send deadline",
                               resend=True),
}

# CardCo payouts, by the payout object's `status`.
PAYOUT_TABLE = StatusTable(PAYOUT_TABLE_VERSION, {
    "processing": Row(AttemptState.STARTED, "provider.accepted",
                      "accepted for asynchronous processing; not completed: wait for a lookup or notification"),
    "paid": Row(AttemptState.SUCCEEDED, "provider.paid", "the provider's contract establishes the effect"),
    "failed": Row(AttemptState.FAILED, "provider.failed",
                  "documented no-effect rejection (e.g. destination_closed); resending fails the same way"),
    "returned": Row(AttemptState.SUCCEEDED, "provider.returned",
                    "completed, then returned by the bank: the payout happened; the return is a later event"),
}, ERROR_ROWS)

# Recall objects (docs/decisions/0015; CardCo extension ``payout_recall``), by their `status`: the
# same rows for errors, no response and mismatches; a failed recall is a documented no-effect.
RECALL_TABLE = StatusTable(RECALL_TABLE_VERSION, {
    "processing": Row(AttemptState.STARTED, "provider.accepted",
                      "recall accepted for asynchronous processing: wait for a lookup or notification"),
    "recalled": Row(AttemptState.SUCCEEDED, "provider.recalled", "the provider's contract establishes the recall"),
    "failed": Row(AttemptState.FAILED, "provider.failed",
                  "documented no-effect (recall_window_closed, payout_not_paid, already_recalled)"),
}, ERROR_ROWS)

# CardCo refund objects (docs/decisions/0021), by their `status`: the payout table's rows for errors,
# no response and mismatches apply unchanged; a failed refund is a documented no-effect.
REFUND_TABLE = StatusTable(REFUND_TABLE_VERSION, {
    "processing": Row(AttemptState.STARTED, "provider.accepted",
                      "refund accepted for asynchronous processing: wait for a lookup or notification"),
    "succeeded": Row(AttemptState.SUCCEEDED, "provider.refunded", "the provider's contract establishes the refund"),
    "failed": Row(AttemptState.FAILED, "provider.failed",
                  "documented no-effect (payment_not_refundable, already_refunded)"),
}, ERROR_ROWS)
