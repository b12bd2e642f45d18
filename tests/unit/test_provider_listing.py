"""Each provider's listing by creation time, read into the common shapes
(gateway.domain.provider_listing): recorded pages shaped as CardCo's extension
(docs/rehearsing-incidents.md "Listing by creation time") and Stripe's list API document them.
A page that cannot be read is Unreadable, never an empty page: a failed listing proves nothing
absent (seed 004, "The Recovery Loop": a failed lookup is never "not found")."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gateway.domain.provider_listing import Page, PageRequest, Unreadable
from gateway.providers.cardco import listing as cardco
from gateway.providers.stripe import listing as stripe
from tests.stripe_support import listing, payment_intent, payout, refund

START = datetime(2026, 12, 1, 0, 0, 0, 500000, tzinfo=UTC)
END = datetime(2026, 12, 2, tzinfo=UTC)


def cardco_payment(**fields: object) -> dict[str, object]:
    return {"object": "payment", "id": "pay_1", "client_reference": "ORD-1-a1", "amount_minor": 4250,
            "currency": "EUR", "status": "succeeded", "failure_code": None, "next_action": None, "sequence": 2,
            "created_at": "2026-12-01T09:00:00.250Z"} | fields


def test_cardco_pages_ask_for_the_window_and_continue_after_the_cursor() -> None:
    assert cardco.page_request("payout_recall", START, END, None) == PageRequest(
        "/v1/payout_recalls", {"created_gte": "2026-12-01T00:00:00.500000Z", "created_lt": "2026-12-02T00:00:00Z",
                               "limit": "100"})
    assert cardco.page_request("payment", START, END, "pay_9").params["starting_after"] == "pay_9"


def test_cardco_page_reads_objects_and_the_next_cursor() -> None:
    body = json.dumps({"data": [cardco_payment()], "has_more": True, "next_cursor": "pay_1"}).encode()
    page = cardco.read_page("payment", 200, body)
    assert isinstance(page, Page) and page.cursor == "pay_1"
    (listed,) = page.objects
    assert (listed.kind, listed.id, listed.client_reference, listed.amount_minor, listed.currency, listed.status) == (
        "payment", "pay_1", "ORD-1-a1", 4250, "EUR", "succeeded")
    assert listed.created_at == datetime(2026, 12, 1, 9, 0, 0, 250000, tzinfo=UTC)
    assert listed.record["object"] == "payment"
    last = cardco.read_page("payment", 200, json.dumps({"data": [], "has_more": False, "next_cursor": None}).encode())
    assert last == Page((), None)


def test_cardco_pipeline_records_keep_their_identity_fields() -> None:
    document = {"object": "payout", "id": "po_1", "client_reference": "PO-1-a1", "amount_minor": 100,
                "currency": "EUR", "status": "paid", "failure_code": None, "destination_token": "dst_1",
                "created_at": "2026-12-01T09:00:00Z"}
    page = cardco.read_page("payout", 200, json.dumps({"data": [document], "has_more": False}).encode())
    assert isinstance(page, Page) and page.objects[0].record["destination_token"] == "dst_1"


@pytest.mark.parametrize(("status", "body"), [
    (500, b"{}"),
    (200, b"not json"),
    (200, json.dumps({"data": [cardco_payment(amount_minor="x")], "has_more": False}).encode()),
    (200, json.dumps({"data": [cardco_payment()], "has_more": True}).encode()),  # more, but no cursor
    (200, json.dumps({"has_more": False}).encode()),
])
def test_a_cardco_page_that_cannot_be_read_is_unreadable(status: int, body: bytes) -> None:
    assert isinstance(cardco.read_page("payment", status, body), Unreadable)


def test_stripe_pages_ask_for_whole_seconds_around_the_window() -> None:
    request = stripe.page_request("payment", START, END, "pi_9")
    assert request == PageRequest("/v1/payment_intents", {
        "created[gte]": str(int(datetime(2026, 12, 1, tzinfo=UTC).timestamp())),
        "created[lt]": str(int(END.timestamp())), "limit": "100", "starting_after": "pi_9"})
    assert stripe.page_request("payment_refund", START, END, None).path == "/v1/refunds"
    assert "payout_recall" not in stripe.PATHS  # docs/decisions/0047


def test_stripe_pages_read_intents_refunds_and_payouts_with_the_last_id_as_cursor() -> None:
    intents = stripe.read_page("payment", 200, json.dumps(listing(payment_intent(), has_more=True)).encode())
    assert isinstance(intents, Page) and intents.cursor == "pi_3Q0abc"
    (intent,) = intents.objects
    assert (intent.id, intent.client_reference, intent.amount_minor, intent.currency, intent.status) == (
        "pi_3Q0abc", "ORD-5521-a1", 4250, "EUR", "succeeded")
    assert intent.created_at == datetime.fromtimestamp(1764600000, UTC)
    payouts = stripe.read_page("payout", 200, json.dumps(listing(payout())).encode())
    assert isinstance(payouts, Page) and payouts.cursor is None
    assert payouts.objects[0].record["destination_token"] == "ba_1Q0dest"
    refunds = stripe.read_page("payment_refund", 200, json.dumps(listing(refund())).encode())
    assert isinstance(refunds, Page) and refunds.objects[0].record["payment"] == "pi_3Q0abc"


@pytest.mark.parametrize(("status", "body"), [
    (401, b"{}"),
    (200, json.dumps({"data": [], "has_more": False}).encode()),  # not Stripe's list shape
    (200, json.dumps(listing(payout())).encode()),  # a payout where intents were asked for
    (200, json.dumps(listing(has_more=True)).encode()),
])
def test_a_stripe_page_that_cannot_be_read_is_unreadable(status: int, body: bytes) -> None:
    assert isinstance(stripe.read_page("payment", status, body), Unreadable)
