"""What Stripe's answers mean (docs/decisions/0047): recorded test vectors shaped as
Stripe's API reference documents them, one per documented response of a PaymentIntent create, a
lookup, and each row of the versioned payout and refund tables (seed 000, "Production
Adaptation"); anything undocumented or unreadable is Unknown (seed 004)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gateway.domain.outcomes import AttemptState, Expected, ProviderResponse, classify, classify_record
from gateway.domain.provider_evidence import object_evidence
from gateway.providers import checkout
from gateway.providers.cardco import CARDCO
from gateway.providers.stripe import STRIPE
from gateway.providers.stripe import answers as rules
from gateway.providers.stripe.tables import PAYOUT_TABLE, REFUND_TABLE
from gateway.settings import ProviderAccount
from tests.stripe_support import (
    card_declined,
    declined_intent,
    error,
    listing,
    payment_intent,
    payout,
    refund,
    requires_action,
    search_result,
)

ACCOUNT = "stripe:acct_store:test"


def body(document: object) -> bytes:
    return json.dumps(document).encode()


@pytest.mark.parametrize("status, document, finding, reason, provider_status", [
    (200, payment_intent("succeeded"), "succeeded", None, "succeeded"),
    (200, payment_intent("processing"), "processing", None, "processing"),
    (200, requires_action(), "requires_action", None, "requires_action"),
    (200, declined_intent(), "failed", "insufficient_funds", "requires_payment_method"),
    (200, payment_intent("canceled", cancellation_reason="abandoned"), "failed", "abandoned", "canceled"),
    (200, payment_intent("requires_capture"), "processing", None, "requires_capture"),  # 0047: never captured
    (200, payment_intent("requires_confirmation"), "unknown", "provider.undocumented-status.requires_confirmation",
     None),
    (402, card_declined(), "failed", "insufficient_funds", "requires_payment_method"),
    (400, error("idempotency_error"), "key_in_use", "provider.idempotency-key-in-use", None),
    (409, error("invalid_request_error", "idempotency_key_in_use"), "unknown",
     "provider.conflict.idempotency_key_in_use", None),
    (400, error("invalid_request_error", "parameter_missing", param="amount"), "rejected", "parameter_missing", None),
    (400, error("invalid_request_error", "resource_missing", param="payment_method"), "rejected", "resource_missing",
     None),
    (401, error("invalid_request_error"), "rejected", "invalid_request_error", None),
    (429, error("invalid_request_error", "rate_limit"), "rejected", "rate_limit", None),
    # A rate limit as API versions before 2015-09-08 answered it: no effect, whatever its type says.
    (400, error("invalid_request_error", "rate_limit"), "rejected", "rate_limit", None),
    (400, error("api_error", "rate_limit"), "rejected", "rate_limit", None),
    (500, error("api_error"), "unknown", "provider.status-500", None),
    (418, error("teapot_error"), "unknown", "provider.undocumented.418.teapot_error", None),
    (200, {"object": "payment_intent"}, "unknown", "provider.malformed-body", None),
    (200, {**payment_intent(), "object": "charge"}, "unknown", "provider.malformed-body", None),
])
def test_payment_intent_answers(status: int, document: object, finding: str, reason: str | None,
                                provider_status: str | None) -> None:
    evidence = rules.payment_evidence(ACCOUNT, status, body(document))
    assert (evidence.finding, evidence.reason, evidence.provider_status) == (finding, reason, provider_status)


def test_a_succeeded_intent_carries_its_id_reference_amount_and_upper_case_currency() -> None:
    evidence = rules.payment_evidence(ACCOUNT, 200, body(payment_intent()))
    assert (evidence.provider_id, evidence.amount_minor, evidence.currency) == ("pi_3Q0abc", 4250, "EUR")


def test_requires_action_stores_stripes_next_action_as_the_customer_action() -> None:
    evidence = rules.payment_evidence(ACCOUNT, 200, body(requires_action()))
    assert evidence.next_action is not None and evidence.next_action["type"] == "use_stripe_sdk"
    assert evidence.next_action["use_stripe_sdk"]["type"] == "three_d_secure_redirect"


@pytest.mark.parametrize("raw, reason", [(b"", "provider.empty-body"), (b"{\"id\": ", "provider.malformed-body"),
                                         (b"\xff\xfe", "provider.malformed-body")])
def test_empty_truncated_and_undecodable_bodies_are_unknown(raw: bytes, reason: str) -> None:
    assert (rules.payment_evidence(ACCOUNT, 200, raw).finding, rules.payment_evidence(ACCOUNT, 200, raw).reason) \
        == ("unknown", reason)


def test_the_create_body_is_form_encoded_with_confirm_and_the_reference_in_metadata() -> None:
    sent = rules.payment_body(amount_minor=4250, currency="EUR", payment_method="pm_card_visa",
                              client_reference="ORD-5521-a1")
    fields = rules.form_fields(sent)
    assert fields["amount"] == "4250" and fields["currency"] == "eur" and fields["confirm"] == "true"
    assert fields["metadata[client_reference]"] == "ORD-5521-a1" and fields["payment_method"] == "pm_card_visa"
    assert rules.common_fields(sent)["amount_minor"] == 4250 and rules.common_fields(sent)["currency"] == "EUR"


@pytest.mark.parametrize("status, document, listing, outcome", [
    (200, payment_intent(), False, "found"),
    (404, error("invalid_request_error", "resource_missing"), False, "not-found"),
    (200, search_result(payment_intent()), True, "found"),
    (200, search_result(), True, "not-found"),  # never proof of absence: only a same-key resend follows
    (200, search_result(payment_intent(), payment_intent(id="pi_2")), True, "ambiguous"),
    (429, error("invalid_request_error", "rate_limit"), True, "rate-limited"),
    (400, error("invalid_request_error", "rate_limit"), False, "rate-limited"),  # the legacy rate limit
    (500, error("api_error"), False, "failed"),
    (404, error("invalid_request_error"), True, "failed"),
    (200, {"object": "search_result"}, True, "failed"),
])
def test_lookups_say_failed_never_not_found_when_the_lookup_itself_failed(status: int, document: object,
                                                                          listing: bool, outcome: str) -> None:
    assert rules.lookup_result(status, body(document), "2", listing=listing).outcome == outcome


def test_a_rate_limited_lookup_carries_retry_after() -> None:
    assert rules.lookup_result(429, body(error("invalid_request_error", "rate_limit")), "7",
                               listing=True).retry_after_s == 7.0


def test_a_found_intent_is_evidence_of_its_status_under_the_account() -> None:
    found = rules.lookup_result(200, body(payment_intent("processing")), None, listing=False)
    assert found.payment is not None
    assert object_evidence(ACCOUNT, found.payment).finding == "processing"


def test_the_search_query_escapes_quotes() -> None:
    assert rules.search_query("O'R-1-a1") == "metadata['client_reference']:'O\\'R-1-a1'"


PAYOUT_EXPECTED = Expected("PAY-3107-a1", 425000, "EUR")


@pytest.mark.parametrize("status, state", [("pending", "Started"), ("in_transit", "Started"), ("paid", "Succeeded"),
                                           ("failed", "Failed"), ("canceled", "Failed"), ("exploded", "Unknown")])
def test_each_row_of_the_payout_table(status: str, state: str) -> None:
    seen = classify_record(rules.record(payout(status)), PAYOUT_EXPECTED, PAYOUT_TABLE)
    assert (seen.state.value, seen.table) == (state, "stripe-payouts/2025-09-30.1")


@pytest.mark.parametrize("status, state", [("pending", "Started"), ("requires_action", "Started"),
                                           ("succeeded", "Succeeded"), ("failed", "Failed"), ("canceled", "Failed")])
def test_each_row_of_the_refund_table(status: str, state: str) -> None:
    seen = classify_record(rules.record(refund(status)), Expected("ORD-5521-r1", 4250, "EUR"), REFUND_TABLE)
    assert seen.state.value == state


@pytest.mark.parametrize("status, document, state, resend", [
    (400, error("idempotency_error"), AttemptState.UNKNOWN, False),
    (409, error("invalid_request_error", "idempotency_key_in_use"), AttemptState.UNKNOWN, False),
    (429, error("invalid_request_error", "rate_limit"), AttemptState.STARTED, True),
    (400, error("invalid_request_error", "rate_limit"), AttemptState.STARTED, True),  # legacy: a 429, not a Failed
    (400, error("invalid_request_error", "balance_insufficient"), AttemptState.FAILED, False),  # by its type
    (500, error("api_error"), AttemptState.UNKNOWN, False),
    (200, payout("paid"), AttemptState.SUCCEEDED, False),
    (200, payout("paid", amount=1), AttemptState.UNKNOWN, False),  # a mismatching record is not the attempt's
])
def test_payout_create_answers(status: int, document: object, state: AttemptState, resend: bool) -> None:
    observation = ProviderResponse(status, body(document), 3.0)
    seen = classify(observation, PAYOUT_EXPECTED, PAYOUT_TABLE)
    assert (seen.state, seen.row.resend) == (state, resend)


@pytest.mark.parametrize("header, allowed", [(None, True), ("true", True), ("false", False), ("False", False),
                                             (" false ", False), ("", True)])
def test_stripe_should_retry_false_forbids_a_resend(header: str | None, allowed: bool) -> None:
    """Docs/decisions/0055: ``Stripe-Should-Retry: false`` forbids a resend; ``true``
    or no header leaves it to the table."""
    assert rules.resend_allowed(header) is allowed


def test_a_429_that_stripe_says_not_to_retry_is_failed_not_resent() -> None:
    """Decision 0047: a 429 is a no-effect rejection (rate limiters run before the idempotency
    layer); with ``Stripe-Should-Retry: false`` it is seed 000's "rejection it documents as
    no-effect ... resending fails the same way": Failed, no resend (docs/decisions/0055)."""
    observation = ProviderResponse(429, body(error("invalid_request_error", "rate_limit")), None, resend_allowed=False)
    seen = classify(observation, PAYOUT_EXPECTED, PAYOUT_TABLE)
    assert (seen.state, seen.reason, seen.row.resend) == (AttemptState.FAILED, "provider.do-not-retry", False)


NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize("status, document, usable", [
    (200, {"id": "pm_1", "object": "payment_method", "type": "card", "card": {"exp_month": 12, "exp_year": 2026}},
     True),  # through the end of its expiry month
    (200, {"id": "pm_1", "object": "payment_method", "type": "card", "card": {"exp_month": 11, "exp_year": 2026}},
     False),
    (200, {"id": "pm_1", "object": "payment_method", "type": "sepa_debit"}, True),
    (404, error("invalid_request_error", "resource_missing"), False),
    (500, error("api_error"), None),
    (200, {"object": "customer"}, None),
])
def test_a_payment_method_is_usable_until_its_card_expires(status: int, document: object, usable: bool | None) -> None:
    """Seed 004: resend only "while the payment method is still usable" (docs/decisions/0027)."""
    assert rules.payment_method_usable(status, body(document), NOW) is usable


def test_stripes_retry_after_is_never_relied_on_and_cardcos_is() -> None:
    """Stripe does not document ``Retry-After`` (its rate-limits guide asks for an exponential
    backoff): the adapter never reads it, for a send (the resend waits paygate's doubling backoff)
    nor for a lookup (the account pauses for its own backoff); CardCo's API.md documents it."""
    limited = body(error("invalid_request_error", "rate_limit"))
    assert STRIPE.retry_after_s({"retry-after": "7"}) is None
    assert checkout(STRIPE).lookup_result(429, limited, "7", listing=True).retry_after_s is None
    assert STRIPE.rate_limited(400, limited) and STRIPE.rate_limited(429, b"")
    assert not STRIPE.rate_limited(400, body(error("invalid_request_error", "parameter_missing")))
    assert CARDCO.retry_after_s({"retry-after": "7"}) == 7.0


@pytest.mark.parametrize("document, outcome", [
    (listing(payment_intent(id="pi_other", client_reference="ORD-1-a1"), payment_intent(), url="/v1/payment_intents"),
     "found"),
    (listing(payment_intent(id="pi_other", client_reference="ORD-1-a1"), url="/v1/payment_intents"), "not-found"),
    (listing(payment_intent(id="pi_other", client_reference="ORD-1-a1"), url="/v1/payment_intents", has_more=True),
     "failed"),  # more pages: the list cannot show the payment is absent
    (listing(payment_intent(), payment_intent(id="pi_2"), url="/v1/payment_intents"), "ambiguous"),
])
def test_a_listing_lookup_matches_the_metadata_reference(document: object, outcome: str) -> None:
    """Where Search is unavailable, a lookup by reference is one page of ``GET /v1/payment_intents``
    created since the attempt, matched by ``metadata['client_reference']``, as payouts are."""
    found = rules.lookup_result(200, body(document), None, listing=True, client_reference="ORD-5521-a1")
    assert found.outcome == outcome
    if outcome == "found":
        assert found.payment is not None and found.payment.id == "pi_3Q0abc"


def test_an_account_looking_payments_up_by_listing_lists_from_the_attempts_creation() -> None:
    account = ProviderAccount(id=ACCOUNT, base_url="https://api.stripe.com", api_key="sk", webhook_endpoint_id="e",
                              api_version="2025-09-30.clover", payment_lookup="list")
    since = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert checkout(STRIPE).lookup(provider_id=None, client_reference="ORD-5521-a1", account=account, since=since) == (
        "/v1/payment_intents", {"created[gte]": str(int(since.timestamp()) - 300), "limit": "100"})
    searching = account.model_copy(update={"payment_lookup": "search"})
    assert checkout(STRIPE).lookup(provider_id=None, client_reference="ORD-5521-a1", account=searching,
                                 since=since)[0] == "/v1/payment_intents/search"
    cardco = ProviderAccount(id="cardco:acct_store:test", base_url="https://x", api_key="k", webhook_endpoint_id="c",
                             payment_lookup="list")
    assert CARDCO.account_problem(cardco) == "payment_lookup is a Stripe setting"


def test_the_client_secret_is_read_only_from_a_200_payment_intent_and_cardco_has_none() -> None:
    """Stripe.js's secret (docs/decisions/0078): the PaymentIntent's ``client_secret`` from a read
    of it; an error, an unreadable body or a missing or empty secret is None (the status shows null)."""
    read = checkout(STRIPE).client_secret
    intent = requires_action()
    assert read(200, json.dumps(intent).encode()) == "pi_3Q0abc_secret_x"
    assert read(500, json.dumps(intent).encode()) is None
    assert read(404, json.dumps(error("invalid_request_error", "resource_missing")).encode()) is None
    assert read(200, b"<html>") is None
    assert read(200, json.dumps(intent | {"client_secret": ""}).encode()) is None
    assert read(200, json.dumps(intent | {"client_secret": None}).encode()) is None
    assert checkout(CARDCO).client_secret(200, json.dumps(intent).encode()) is None
