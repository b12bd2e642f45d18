"""Stripe events as common evidence (docs/decisions/0047 item 6): ``payment_intent.*``,
``charge.refunded`` and ``payout.*`` read into the common notification, keyed by the event id;
a type that disagrees with its object, a partial refund, or any other type is unreadable (recorded
and escalated by the handler, seed 004), never an exception."""

from __future__ import annotations

import json

import pytest

from gateway.domain.notification_keys import notification_key
from gateway.domain.provider_evidence import Notification, Unreadable, from_detail, object_evidence, refund_evidence
from gateway.providers.stripe.notifications import parse
from tests.stripe_support import (
    charge_refunded,
    declined_intent,
    event,
    payment_intent,
    payout,
    refund,
    requires_action,
)

ACCOUNT = "stripe:acct_store:test"


def _read(body: bytes) -> Notification:
    parsed = parse(body)
    assert isinstance(parsed, Notification), parsed
    return parsed


@pytest.mark.parametrize("event_type, subject, finding", [
    ("payment_intent.succeeded", payment_intent(), "succeeded"),
    ("payment_intent.processing", payment_intent("processing"), "processing"),
    ("payment_intent.requires_action", requires_action(), "requires_action"),
    ("payment_intent.payment_failed", declined_intent(), "failed"),
    ("payment_intent.canceled", payment_intent("canceled"), "failed"),
    ("payment_intent.amount_capturable_updated", payment_intent("requires_capture"), "processing"),
    ("charge.refunded", charge_refunded(), "refunded"),
])
def test_payment_events_are_evidence_about_the_payment_intent(event_type: str, subject: dict[str, object],
                                                              finding: str) -> None:
    notification = _read(event(event_type, subject))
    evidence = object_evidence(ACCOUNT, notification.subject)
    assert (notification.kind, notification.provider_object_id, evidence.finding) == ("payment", "pi_3Q0abc", finding)


def test_the_event_id_is_the_deduplication_key_and_the_reference_comes_from_metadata() -> None:
    notification = _read(event("payment_intent.succeeded", payment_intent(), id="evt_42"))
    assert notification.client_reference == "ORD-5521-a1"
    assert notification_key(event_id=notification.event_id, webhook_id="", fields=notification.canonical_fields(),
                            synthesize=True, webhook_id_stable=True) == "evt_42"


def test_a_stored_stripe_notification_is_applied_again_with_its_stripe_status() -> None:
    """Reconciliation re-applies a stored notification from its detail (seed 004)."""
    notification = _read(event("payment_intent.payment_failed", declined_intent()))
    again = from_detail(notification.detail())
    assert again == notification
    assert again is not None and object_evidence(ACCOUNT, again.subject).provider_status == "requires_payment_method"


def test_a_charge_listing_our_refund_is_evidence_about_that_refund_attempt() -> None:
    refunded = _read(event("charge.refunded", charge_refunded(refund())))
    evidence = refund_evidence(refunded)
    assert evidence is not None and evidence.kind == "refund"
    assert (evidence.provider_object_id, evidence.client_reference) == ("re_1Q0abc", "ORD-5521-r1")
    assert refund_evidence(_read(event("charge.refunded", charge_refunded()))) is None  # made outside paygate


@pytest.mark.parametrize("event_type, status", [("refund.created", "pending"), ("refund.updated", "succeeded"),
                                                ("refund.failed", "failed")])
def test_refund_events_are_evidence_about_the_refund_itself(event_type: str, status: str) -> None:
    notification = _read(event(event_type, refund(status)))
    assert refund_evidence(notification) is notification
    assert (notification.kind, notification.provider_object_id, notification.client_reference) == (
        "refund", "re_1Q0abc", "ORD-5521-r1")
    assert notification.subject.status == status and notification.subject.payment == "pi_3Q0abc"  # type: ignore[attr-defined]


@pytest.mark.parametrize("event_type, status", [("payout.paid", "paid"), ("payout.failed", "failed"),
                                                ("payout.canceled", "canceled"), ("payout.created", "pending"),
                                                ("payout.updated", "in_transit")])
def test_payout_events_carry_stripes_payout_status_for_the_payout_table(event_type: str, status: str) -> None:
    notification = _read(event(event_type, payout(status)))
    assert (notification.kind, notification.subject.status, notification.client_reference) == (
        "payout", status, "PAY-3107-a1")
    assert notification.subject.amount_minor == 425000 and notification.subject.currency == "EUR"
    assert "ba_1Q0dest" not in str(notification.detail())  # the destination is never kept (DESIGN invariant 8)


@pytest.mark.parametrize("body, reason", [
    (event("payment_intent.succeeded", payment_intent("processing")), "type-status-mismatch"),
    (event("payout.paid", payout("failed")), "type-status-mismatch"),
    (event("refund.failed", refund("succeeded")), "type-status-mismatch"),
    (event("refund.updated", payout()), "malformed-object"),
    (event("charge.refunded", charge_refunded(refunded=False)), "partial-refund"),
    (event("customer.created", {"id": "cus_1", "object": "customer"}), "unknown-type"),
    (event("payment_intent.created", payment_intent("requires_payment_method")), "unknown-type"),
    (event("payout.paid", {**payout(), "object": "transfer"}), "malformed-object"),
    (event("payment_intent.succeeded", {"object": "payment_intent", "status": "succeeded"}), "malformed-object"),
    (b"{not json", "malformed-json"),
    (b'{"id": "evt_1", "type": "payout.paid"}', "malformed-payload"),
])
def test_what_is_not_evidence_is_unreadable(body: bytes, reason: str) -> None:
    parsed = parse(body)
    assert isinstance(parsed, Unreadable) and parsed.reason == reason


def test_the_events_api_version_travels_with_it_into_the_stored_detail_and_back() -> None:
    """Stripe renders an event in its endpoint's API version (``api_version``): the handler compares
    it with the account's pinned one, so it is read, recorded, and restored by a later application."""
    parsed = _read(event("payment_intent.succeeded", payment_intent()))
    assert parsed.api_version == "2025-09-30.clover"
    assert parsed.detail()["api_version"] == "2025-09-30.clover"
    restored = from_detail(parsed.detail())
    assert restored is not None and restored.api_version == "2025-09-30.clover"


def test_a_connect_events_account_travels_with_it_and_a_platform_event_names_none() -> None:
    """Stripe Connect: an event of a connected account carries its ``account``; the handler gives
    it to the account configured for that connected account, never to the platform's."""
    document = json.loads(event("payment_intent.succeeded", payment_intent()))
    connected = _read(json.dumps({**document, "account": "acct_1ShopA"}).encode())
    assert connected.connected_account == "acct_1ShopA"
    assert connected.detail()["connected_account"] == "acct_1ShopA"
    restored = from_detail(connected.detail())
    assert restored is not None and restored.connected_account == "acct_1ShopA"
    platform = _read(event("payment_intent.succeeded", payment_intent()))
    assert platform.connected_account is None and "connected_account" not in platform.detail()
