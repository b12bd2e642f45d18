"""Seed 000, "Classify the Outcome by What the Provider Can Prove" and "Production Adaptation":
the versioned CardCo payout table (gateway/providers/cardco/tables.py), one recorded test vector per documented response (bodies as
CardCo's fake sends them, API.md "provider_fake: CardCo")."""

from __future__ import annotations

import pytest

from gateway.domain.outcomes import Expected, NoResponse, Observation, ProviderResponse, classify
from gateway.providers.cardco.tables import PAYOUT_TABLE, PAYOUT_TABLE_VERSION, RECALL_TABLE, RECALL_TABLE_VERSION

EXPECTED = Expected("PAY-3107-a1", 425_000, "EUR")


def payout(status: str, failure_code: str | None = None, amount: int = 425_000) -> bytes:
    failure = "null" if failure_code is None else f'"{failure_code}"'
    return (f'{{"object":"payout","id":"po_1","client_reference":"PAY-3107-a1","amount_minor":{amount},'
            f'"currency":"EUR","status":"{status}","failure_code":{failure},"destination_token":"t",'
            f'"expires_at":"2026-11-29T16:05:04Z","sequence":1}}').encode()


def error(code: str) -> bytes:
    return f'{{"error":{{"code":"{code}","message":"m"}}}}'.encode()


VECTORS: list[tuple[str, Observation, str, str, bool]] = [
    ("200 processing", ProviderResponse(200, payout("processing")), "Started", "provider.accepted", False),
    ("200 paid", ProviderResponse(200, payout("paid")), "Succeeded", "provider.paid", False),
    ("200 failed destination_closed", ProviderResponse(200, payout("failed", "destination_closed")), "Failed",
     "destination_closed", False),
    ("200 returned", ProviderResponse(200, payout("returned", "account_closed")), "Succeeded", "provider.returned",
     False),
    ("400 request_expired", ProviderResponse(400, error("request_expired")), "NotApplied",
     "provider.request-expired", False),
    ("400 invalid_request", ProviderResponse(400, error("invalid_request")), "Failed", "provider.invalid-request",
     False),
    ("409 idempotency_key_in_use", ProviderResponse(409, error("idempotency_key_in_use")), "Unknown",
     "provider.idempotency-key-in-use", False),
    ("429 rate_limited", ProviderResponse(429, error("rate_limited"), 1.0), "Started", "provider.rate-limited", True),
    ("429 rate_limited, do not retry", ProviderResponse(429, error("rate_limited"), None, resend_allowed=False),
     "Failed", "provider.do-not-retry", False),
    ("500 internal_error", ProviderResponse(500, error("internal_error")), "Unknown",
     "provider.undocumented-response", False),
    ("401 unauthorized", ProviderResponse(401, error("unauthorized")), "Unknown", "provider.undocumented-response",
     False),
    ("200 unknown status", ProviderResponse(200, payout("on_hold")), "Unknown", "provider.undocumented-response",
     False),
    ("200 another amount", ProviderResponse(200, payout("paid", amount=1)), "Unknown", "provider.record-mismatch",
     False),
    ("timeout", NoResponse("timeout"), "Unknown", "provider.no-response", False),
    ("transport error", NoResponse("transport"), "Unknown", "provider.no-response", False),
    ("malformed body", ProviderResponse(200, payout("paid")[:40]), "Unknown", "provider.malformed-response", False),
    ("empty body", ProviderResponse(200, b""), "Unknown", "provider.malformed-response", False),
]


@pytest.mark.parametrize(("name", "observation", "state", "reason", "resend"), VECTORS, ids=[v[0] for v in VECTORS])
def test_each_documented_response_has_its_row(name: str, observation: Observation, state: str, reason: str,
                                              resend: bool) -> None:
    classification = classify(observation, EXPECTED, PAYOUT_TABLE)
    assert (classification.state.value, classification.reason, classification.row.resend) == (state, reason, resend)


@pytest.mark.parametrize("retry_after_s", [2.0, 0.0, None])
def test_a_resend_row_carries_the_answers_retry_after_or_none(retry_after_s: float | None) -> None:
    """An absent Retry-After stays absent (None), so the executor can tell it from
    "Retry-After: 0" and wait its own backoff instead of resending at once."""
    answer = ProviderResponse(429, error("rate_limited"), retry_after_s)
    assert classify(answer, EXPECTED, PAYOUT_TABLE).retry_after_s == retry_after_s


def test_advice_not_to_retry_changes_nothing_but_a_resend_row() -> None:
    """Only a documented no-effect rejection is ever resent; "do not retry" on any other answer
    leaves its row as it is (a 500 stays Unknown: it may have taken effect)."""
    for status, body in ((500, error("internal_error")), (200, payout("paid")), (400, error("invalid_request"))):
        assert classify(ProviderResponse(status, body, None, resend_allowed=False), EXPECTED, PAYOUT_TABLE) == \
            classify(ProviderResponse(status, body), EXPECTED, PAYOUT_TABLE)


def test_the_table_is_versioned() -> None:
    assert PAYOUT_TABLE_VERSION == "cardco-payouts/2026-11-01.1"


@pytest.mark.parametrize("observation", [ProviderResponse(200, payout("paid")), ProviderResponse(500, error("x")),
                                         ProviderResponse(200, b"not json"), NoResponse("timeout")])
def test_every_classification_names_the_table_version_evidence_records(observation: Observation) -> None:
    """Seed 000, "Production Adaptation": an explicit, versioned classification table; the version
    travels with each classification into the provider observation it is recorded as."""
    assert classify(observation, EXPECTED, PAYOUT_TABLE).table == PAYOUT_TABLE_VERSION
    assert classify(observation, EXPECTED, RECALL_TABLE).table == RECALL_TABLE_VERSION
