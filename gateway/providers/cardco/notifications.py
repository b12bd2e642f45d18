"""Reading a verified CardCo notification (API.md "Provider notifications": the CardCo payload
and its types; seed 004, "The Notification Handler").

:func:`parse` turns the raw body into a :class:`Notification` or an :class:`Unreadable`. A
verified body that is not JSON, not the documented shape, or of an unknown type is still recorded
and escalated by the handler, so it is a value here, never an exception. What the history keeps
(:meth:`Notification.detail`) is identifiers, type, status, amount, currency and the canonical key
fields, never the raw payload (DESIGN invariant 8): a payout's destination token is not even read.
"""

from __future__ import annotations

from pydantic import ValidationError

from gateway.domain.notification_keys import present
from gateway.domain.provider_evidence import (
    Notification,
    PaymentObject,
    PayoutObject,
    PayoutRecallObject,
    Unreadable,
    event_envelope,
    from_detail,
    refund_evidence,
    unreadable,
)

__all__ = ["Notification", "Unreadable", "from_detail", "parse", "refund_evidence"]

PAYMENT_TYPES = frozenset({"payment.processing", "payment.requires_action", "payment.succeeded",
                           "payment.failed", "payment.refunded"})
PAYOUT_TYPES = frozenset({"payout.processing", "payout.paid", "payout.failed", "payout.returned"})
# CardCo's recall extension (docs/decisions/0015): a ``payout_recall`` object of its own.
RECALL_TYPES = frozenset({"payout.recall_processing", "payout.recalled", "payout.recall_failed"})


def recall_event_type(status: str) -> str:
    """``payout.recalled``, ``payout.recall_processing``, ``payout.recall_failed``."""
    return "payout.recalled" if status == "recalled" else f"payout.recall_{status}"


def parse(body: bytes) -> Notification | Unreadable:
    """Read a CardCo event: ``{"id", "type", "created", "data": {"object": {...}}}``."""
    envelope = event_envelope(body, PAYMENT_TYPES | PAYOUT_TYPES | RECALL_TYPES)
    if isinstance(envelope, Unreadable):
        return envelope
    document, event_type = envelope
    model = PaymentObject if event_type in PAYMENT_TYPES else \
        PayoutRecallObject if event_type in RECALL_TYPES else PayoutObject
    try:
        subject = model.model_validate(document["data"].get("object"))
    except ValidationError:
        return unreadable("malformed-object", body, document)
    announced = recall_event_type(subject.status) if isinstance(subject, PayoutRecallObject) \
        else f"{subject.object}.{subject.status}"
    if event_type != announced:
        # CardCo names each event after the status it announces; a disagreement is not evidence.
        return unreadable("type-status-mismatch", body, document)
    return Notification(event_id=present(document.get("id")), event_type=event_type, subject=subject)

