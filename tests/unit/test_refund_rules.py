"""The pure refund rules (gateway/domain/refunds.py). Seed 004 "Cancellation":
"if it turns out to have succeeded, the refund is its own operation"; seed 000 section 17: its own
decision; section 16: identities derived from the number the decision allocated."""

from __future__ import annotations

import json

import pytest

from gateway.domain import refunds
from gateway.domain.errors import OrderNotRefundable, RefundUnresolved
from gateway.domain.outcomes import AttemptState, Expected, classify_record
from gateway.domain.refunds import RefundContext, after_payment, after_refund, decide
from gateway.providers.cardco.notifications import Notification, parse, refund_evidence
from gateway.providers.cardco.tables import REFUND_TABLE


def test_identities_are_the_refunds_own_never_a_payment_attempts() -> None:
    assert refunds.client_reference("ORD-1", 2) == "ORD-1-r2"
    assert refunds.idempotency_key("ORD-1", 2) == "refund-ORD-1-r2"
    assert refunds.owed_escalation_key("ORD-1") == "order:ORD-1:refund-owed"


@pytest.mark.parametrize(("context", "expected"), [
    (RefundContext("Paid", False, False, "pay_1"), ("Allowed", "refund.allowed")),
    (RefundContext("PaidAfterCancel", False, False, "pay_1"), ("Allowed", "refund.allowed")),
    (RefundContext("Paid", False, True, "pay_1"), ("Denied", "refund.already-refunded")),
    (RefundContext("Paid", False, False, None), ("Deferred", "context.unavailable")),
])
def test_a_refund_decision(context: RefundContext, expected: tuple[str, str]) -> None:
    assert decide(context) == expected


@pytest.mark.parametrize("state", ["Open", "CancelRequested", "Cancelled", "Refunded"])
def test_an_order_without_a_payment_to_refund_gets_no_decision(state: str) -> None:
    with pytest.raises(OrderNotRefundable):
        decide(RefundContext(state, False, False, "pay_1"))


def test_no_decision_while_another_refund_might_still_take_effect() -> None:
    with pytest.raises(RefundUnresolved):
        decide(RefundContext("Paid", True, False, "pay_1"))


def test_a_success_on_a_cancelled_order_is_paid_after_cancel_with_a_refund_owed() -> None:
    assert after_payment("CancelRequested") == refunds.PaymentSettlement(
        "PaidAfterCancel", "order-paid-after-cancel", True)
    assert after_payment("Open") == refunds.PaymentSettlement("Paid", "order-confirmation", False)


@pytest.mark.parametrize(("order", "state", "expected"), [
    ("PaidAfterCancel", AttemptState.SUCCEEDED, refunds.RefundSettlement("Refunded", "order-refunded", True)),
    ("Paid", AttemptState.SUCCEEDED, refunds.RefundSettlement("Refunded", "order-refunded", True)),
    ("PaidAfterCancel", AttemptState.FAILED, refunds.RefundSettlement(None, "order-refund-failed")),
    ("PaidAfterCancel", AttemptState.NOT_APPLIED, refunds.RefundSettlement(None, "order-refund-failed")),
    ("Paid", AttemptState.NOT_STARTED, refunds.RefundSettlement(None, "order-refund-failed")),
    ("PaidAfterCancel", AttemptState.UNKNOWN, refunds.RefundSettlement()),
    ("Refunded", AttemptState.SUCCEEDED, refunds.RefundSettlement()),
])
def test_the_order_follows_its_refund(order: str, state: AttemptState, expected: refunds.RefundSettlement) -> None:
    assert after_refund(order, state) == expected


@pytest.mark.parametrize(("status", "state"), [("processing", AttemptState.STARTED),
                                                ("succeeded", AttemptState.SUCCEEDED),
                                                ("failed", AttemptState.FAILED),
                                                ("refunded", AttemptState.UNKNOWN)])
def test_the_refund_classification_table(status: str, state: AttemptState) -> None:
    """A versioned table (seed 000 "Production Adaptation"); a status no row documents is Unknown."""
    record = {"id": "re_1", "client_reference": "ORD-1-r1", "amount_minor": 4250, "currency": "EUR",
              "status": status}
    seen = classify_record(record, Expected("ORD-1-r1", 4250, "EUR"), REFUND_TABLE)
    assert (seen.state, seen.table) == (state, "cardco-refunds/2026-12-01.1")


def _event(type_: str, **payment: object) -> bytes:
    subject = {"object": "payment", "id": "pay_1", "client_reference": "ORD-1-a1", "amount_minor": 4250,
               "currency": "EUR", "status": type_.split(".")[1], "sequence": 3, **payment}
    return json.dumps({"id": "evt_1", "type": type_, "data": {"object": subject}}).encode()


def test_payment_refunded_is_evidence_about_the_refund_it_names() -> None:
    """docs/decisions/0021: ``payment.refunded`` carries ``refund: {id, client_reference}``; seen as
    the refund's own evidence it matches the refund attempt by ``<order_id>-r<N>`` and CardCo's id."""
    parsed = parse(_event("payment.refunded", refund={"id": "re_1", "client_reference": "ORD-1-r1"}))
    assert isinstance(parsed, Notification)
    seen = refund_evidence(parsed)
    assert seen is not None
    assert (seen.kind, seen.event_id, seen.client_reference, seen.provider_object_id) == \
        ("refund", "evt_1", "ORD-1-r1", "re_1")
    assert seen.subject.model_dump() == {
        "object": "refund", "id": "re_1", "client_reference": "ORD-1-r1", "amount_minor": 4250, "currency": "EUR",
        "status": "succeeded", "failure_code": None, "next_action": None, "sequence": 3, "refund": None,
        "payment": "pay_1"}


@pytest.mark.parametrize("body", [_event("payment.refunded"), _event("payment.succeeded")])
def test_a_refund_made_outside_the_gateway_or_another_event_names_no_refund(body: bytes) -> None:
    parsed = parse(body)
    assert isinstance(parsed, Notification) and refund_evidence(parsed) is None
