"""What CardCo's answers mean: recorded test vectors, one per documented response (seed 004:
"Every branch says Unknown" for what is not documented; API.md CardCo statuses and errors)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gateway.providers.cardco.answers import payment_evidence

ACCOUNT = "cardco:acct_store:test"
PAYMENT = {"object": "payment", "id": "pay_1", "client_reference": "ORD-1-a1", "amount_minor": 4250,
           "currency": "EUR", "status": "succeeded", "failure_code": None, "next_action": None, "sequence": 1}


def body(document: object) -> bytes:
    return json.dumps(document).encode()


@pytest.mark.parametrize("status, document, finding, reason", [
    (200, PAYMENT, "succeeded", None),
    (200, {**PAYMENT, "status": "processing"}, "processing", None),
    (200, {**PAYMENT, "status": "failed", "failure_code": "card_declined"}, "failed", "card_declined"),
    (402, {"error": {"code": "card_declined", "message": "declined", "payment": {**PAYMENT, "status": "failed"}}},
     "failed", "card_declined"),
    (402, {"error": {"code": "card_declined"}}, "failed", "card_declined"),
    (400, {"error": {"code": "invalid_request", "message": "bad"}}, "rejected", "invalid_request"),
    (401, {"error": {"code": "unauthorized"}}, "rejected", "unauthorized"),
    (429, {"error": {"code": "rate_limited"}}, "rejected", "rate_limited"),
    (409, {"error": {"code": "idempotency_key_in_use"}}, "key_in_use", "provider.idempotency-key-in-use"),  # 0009
    (500, {"error": {"code": "internal_error"}}, "unknown", "provider.status-500"),
    (503, {"error": {"code": "internal_error"}}, "unknown", "provider.status-503"),
    (418, {"error": {"code": "teapot"}}, "unknown", "provider.undocumented.418.teapot"),
    (200, {**PAYMENT, "status": "exploded"}, "unknown", "provider.undocumented-status.exploded"),
    (200, {"object": "payment"}, "unknown", "provider.malformed-body"),
    (200, [1, 2], "unknown", "provider.malformed-body"),
])
def test_documented_responses(status: int, document: object, finding: str, reason: str | None) -> None:
    evidence = payment_evidence(ACCOUNT, status, body(document))
    assert (evidence.finding, evidence.reason) == (finding, reason)


@pytest.mark.parametrize("raw, reason", [(b"", "provider.empty-body"), (b"   ", "provider.empty-body"),
                                         (b'{"object": "payment", "id"', "provider.malformed-body"),
                                         (b"\xff\xfe", "provider.malformed-body")])
def test_empty_truncated_and_unreadable_bodies_are_unknown(raw: bytes, reason: str) -> None:
    """Seed 004 matrix: "a malformed body, and an empty body each produce Unknown"."""
    evidence = payment_evidence(ACCOUNT, 200, raw)
    assert (evidence.finding, evidence.reason) == ("unknown", reason)


def test_requires_action_carries_the_action_and_its_expiry() -> None:
    action = {"type": "redirect_to_url", "url": "http://cardco.test/3ds", "expires_at": "2026-11-29T16:10:00Z"}
    evidence = payment_evidence(ACCOUNT, 200, body({**PAYMENT, "status": "requires_action", "next_action": action}))
    assert evidence.finding == "requires_action"
    assert evidence.next_action_expires_at == datetime(2026, 11, 29, 16, 10, tzinfo=UTC)
    assert evidence.next_action is not None and evidence.next_action["url"] == "http://cardco.test/3ds"


def test_success_carries_identity_and_money_for_matching() -> None:
    evidence = payment_evidence(ACCOUNT, 200, body(PAYMENT))
    assert (evidence.provider_id, evidence.amount_minor, evidence.currency) == ("pay_1", 4250, "EUR")
