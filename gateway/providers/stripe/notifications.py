"""Stripe webhooks: the event payload (Stripe's Event object; the ``Stripe-Signature``
scheme is gateway.providers.stripe.signatures). Pure: no I/O.

Parsing: ``payment_intent.*``, ``charge.refunded``, ``refund.*`` and ``payout.*`` events become the common
:class:`~gateway.domain.provider_evidence.Notification`, keyed by the event id (Stripe events always
carry one). The event's object is read into the common shape (gateway.providers.stripe.answers); an event whose
type does not agree with its object's status is not evidence (``type-status-mismatch``). Every other
type is recorded and escalated (``unknown-type``): README, "Stripe", lists the events to enable. The
event's ``api_version`` (the version its endpoint renders events in) travels with it: the handler
applies only events in the version the account pins (gateway.providers.stripe.versions). A Connect
event's ``account`` (the connected account it happened on) travels too: the handler gives it to
the configured account naming that ``stripe_account``, never to the platform's.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from gateway.domain.notification_keys import present
from gateway.domain.provider_evidence import (
    Notification,
    PaymentObject,
    PayoutObject,
    RefundObject,
    RefundReference,
    Unreadable,
    event_envelope,
    unreadable,
)
from gateway.providers.stripe.answers import payment_intent, record

# The PaymentIntent statuses each payment_intent event announces.
INTENT_EVENTS = {
    "payment_intent.succeeded": {"succeeded"},
    "payment_intent.processing": {"processing"},
    "payment_intent.requires_action": {"requires_action"},
    "payment_intent.payment_failed": {"requires_payment_method", "canceled"},
    "payment_intent.canceled": {"canceled"},
    "payment_intent.amount_capturable_updated": {"requires_capture"},
}
# The refund statuses each refund event may carry.
REFUND_EVENTS = {
    "refund.created": {"pending", "succeeded", "failed", "requires_action", "canceled"},
    "refund.updated": {"pending", "succeeded", "failed", "requires_action", "canceled"},
    "refund.failed": {"failed"},
}
# The payout statuses each payout event may carry (``payout.updated``: any).
PAYOUT_EVENTS = {
    "payout.created": {"pending", "in_transit"},
    "payout.updated": {"pending", "in_transit", "paid", "failed", "canceled"},
    "payout.paid": {"paid"},
    "payout.failed": {"failed"},
    "payout.canceled": {"canceled"},
}


def _refund_reference(charge: dict[str, Any]) -> RefundReference | None:
    """The latest refund a charge lists, when it carries our metadata reference (a refund paygate made)."""
    refunds = charge.get("refunds")
    data = refunds.get("data") if isinstance(refunds, dict) else None
    for refund in data if isinstance(data, list) else []:
        reference = record(refund)["client_reference"] if isinstance(refund, dict) else None
        if reference is not None and isinstance(refund.get("id"), str):
            return RefundReference(id=refund["id"], client_reference=reference)
    return None


def _refunded_payment(charge: Any) -> PaymentObject | str:
    """``charge.refunded``'s charge as its payment, refunded; or why it is not evidence."""
    if not isinstance(charge, dict) or charge.get("object") != "charge":
        return "malformed-object"
    if charge.get("refunded") is not True:
        return "partial-refund"  # paygate refunds in full; a partial refund is for a person
    currency = charge.get("currency")
    return PaymentObject.model_validate({
        "object": "payment", "id": charge.get("payment_intent"), "client_reference": record(charge)["client_reference"],
        "amount_minor": charge.get("amount"), "currency": currency.upper() if isinstance(currency, str) else currency,
        "status": "refunded", "native_status": "refunded", "refund": _refund_reference(charge)})


def _subject(event_type: str, subject: Any) -> PaymentObject | str:
    """The event's object in the common shape, or why it cannot be read."""
    if event_type == "charge.refunded":
        return _refunded_payment(subject)
    if not isinstance(subject, dict):
        return "malformed-object"
    if event_type in INTENT_EVENTS:
        payment = payment_intent(subject)
        return payment if payment.native_status in INTENT_EVENTS[event_type] else "type-status-mismatch"
    if event_type in REFUND_EVENTS:
        if subject.get("object") != "refund":
            return "malformed-object"
        refund = RefundObject.model_validate({**record(subject, payment=subject.get("payment_intent")),
                                              "object": "refund"})
        return refund if refund.status in REFUND_EVENTS[event_type] else "type-status-mismatch"
    if subject.get("object") != "payout":
        return "malformed-object"
    payout = PayoutObject.model_validate({**record(subject), "object": "payout"})
    return payout if payout.status in PAYOUT_EVENTS[event_type] else "type-status-mismatch"


def parse(body: bytes) -> Notification | Unreadable:
    """Read a Stripe event: ``{"id", "object": "event", "type", "data": {"object": {...}}}``."""
    envelope = event_envelope(body, {*INTENT_EVENTS, *REFUND_EVENTS, *PAYOUT_EVENTS, "charge.refunded"})
    if isinstance(envelope, Unreadable):
        return envelope
    document, event_type = envelope
    try:
        subject = _subject(event_type, document["data"].get("object"))
    except (ValueError, ValidationError):
        return unreadable("malformed-object", body, document)
    if isinstance(subject, str):
        return unreadable(subject, body, document)
    version, connected = document.get("api_version"), document.get("account")
    return Notification(event_id=present(document.get("id")), event_type=event_type, subject=subject,
                        api_version=version if isinstance(version, str) else None,
                        connected_account=connected if isinstance(connected, str) else None)
