"""Reading a verified CardCo notification (API.md "Provider notifications": the CardCo payload
and its types; seed 004, "The Notification Handler").

:func:`parse` turns the raw body into a :class:`Notification` or an :class:`Unreadable`. A
verified body that is not JSON, not the documented shape, or of an unknown type is still recorded
and escalated by the handler, so it is a value here, never an exception. What the history keeps
(:meth:`Notification.detail`) is identifiers, type, status, amount, currency and the canonical key
fields, never the raw payload (DESIGN invariant 8): a payout's destination token is not even read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from gateway.domain.cardco import PaymentObject
from gateway.domain.notification_keys import CanonicalFields, present

PAYMENT_TYPES = frozenset({"payment.processing", "payment.requires_action", "payment.succeeded",
                           "payment.failed", "payment.refunded"})
PAYOUT_TYPES = frozenset({"payout.processing", "payout.paid", "payout.failed", "payout.returned"})
# CardCo's recall extension (docs/decisions/0015): a ``payout_recall`` object of its own.
RECALL_TYPES = frozenset({"payout.recall_processing", "payout.recalled", "payout.recall_failed"})


class PayoutObject(PaymentObject):
    """CardCo's payout object: the same identity, money and status fields as a payment. Every
    other field (its destination token above all) is ignored, never read into memory we keep."""

    object: Literal["payout"]  # type: ignore[assignment]


class PayoutRecallObject(PaymentObject):
    """CardCo's recall object (``prc_...``): identity, money and status like a payout's."""

    object: Literal["payout_recall"]  # type: ignore[assignment]


class RefundObject(PaymentObject):
    """A refund as ``payment.refunded`` names it (docs/decisions/0021): the refund's own id and
    reference, the refunded payment, and the payment's (full) amount and currency."""

    object: Literal["refund"]  # type: ignore[assignment]
    payment: str


def recall_event_type(status: str) -> str:
    """``payout.recalled``, ``payout.recall_processing``, ``payout.recall_failed``."""
    return "payout.recalled" if status == "recalled" else f"payout.recall_{status}"


_MODELS: dict[str, type[PaymentObject]] = {"payment": PaymentObject, "payout": PayoutObject,
                                           "payout_recall": PayoutRecallObject, "refund": RefundObject}


@dataclass(frozen=True)
class Notification:
    """A readable notification about one payment or payout."""

    event_id: str | None
    event_type: str
    subject: PaymentObject  # a PayoutObject for payout.* events, a PayoutRecallObject for recalls

    @property
    def kind(self) -> Literal["payment", "payout", "payout_recall", "refund"]:
        return self.subject.object

    @property
    def payment(self) -> PaymentObject | None:
        return self.subject if self.kind == "payment" else None

    @property
    def provider_object_id(self) -> str | None:
        return present(self.subject.id)

    @property
    def client_reference(self) -> str | None:
        return present(self.subject.client_reference)

    def canonical_fields(self) -> CanonicalFields:
        return CanonicalFields.of(provider_payment_id=self.subject.id, client_reference=self.subject.client_reference,
                                  event_type=self.event_type, status=self.subject.status,
                                  amount_minor=self.subject.amount_minor, currency=self.subject.currency,
                                  sequence=self.subject.sequence)

    def detail(self) -> dict[str, Any]:
        """What the notification event records: enough to re-apply it later, nothing more."""
        return {"provider_event_id": self.event_id, "type": self.event_type, "object": self.kind,
                "provider_object_id": self.provider_object_id, "client_reference": self.client_reference,
                "status": self.subject.status, "amount_minor": self.subject.amount_minor,
                "currency": self.subject.currency, "sequence": self.subject.sequence,
                self.kind: self.subject.model_dump(mode="json"),
                "canonical": self.canonical_fields().as_detail()}


def refund_evidence(notification: Notification) -> Notification | None:
    """``payment.refunded`` seen as evidence about the refund that did it: the same event, its
    subject the refund the payment names (succeeded, for the payment's amount), so a refund attempt
    is matched by its own reference ``<order_id>-r<N>`` and CardCo id like any attempt kind. None
    for any other event, and for a refund the payment does not name (one made outside the gateway)."""
    payment = notification.payment
    if notification.event_type != "payment.refunded" or payment is None or payment.refund is None:
        return None
    return Notification(event_id=notification.event_id, event_type=notification.event_type, subject=RefundObject(
        object="refund", id=payment.refund.id, client_reference=payment.refund.client_reference,
        amount_minor=payment.amount_minor, currency=payment.currency, status="succeeded",
        sequence=payment.sequence, payment=payment.id))


@dataclass(frozen=True)
class Unreadable:
    """A verified body the gateway cannot act on; ``event_id`` when the payload still names one."""

    reason: str
    event_id: str | None
    event_type: str | None
    body_sha256: str
    body_bytes: int

    def detail(self) -> dict[str, Any]:
        # A digest lets an operator match the delivery with the provider's logs without storing it.
        return {"unreadable": self.reason, "provider_event_id": self.event_id, "type": self.event_type,
                "body_sha256": self.body_sha256, "body_bytes": self.body_bytes}


def _unreadable(reason: str, body: bytes, document: Any = None) -> Unreadable:
    fields = document if isinstance(document, dict) else {}
    event_type = fields.get("type")
    return Unreadable(reason=reason, event_id=present(fields.get("id")),
                      event_type=event_type[:100] if isinstance(event_type, str) else None,
                      body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))


def parse(body: bytes) -> Notification | Unreadable:
    """Read a CardCo event: ``{"id", "type", "created", "data": {"object": {...}}}``."""
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _unreadable("malformed-json", body)
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        return _unreadable("malformed-payload", body, document)
    event_type = document.get("type")
    if not isinstance(event_type, str) or event_type not in PAYMENT_TYPES | PAYOUT_TYPES | RECALL_TYPES:
        return _unreadable("unknown-type", body, document)
    model = PaymentObject if event_type in PAYMENT_TYPES else \
        PayoutRecallObject if event_type in RECALL_TYPES else PayoutObject
    try:
        subject = model.model_validate(document["data"].get("object"))
    except ValidationError:
        return _unreadable("malformed-object", body, document)
    announced = recall_event_type(subject.status) if isinstance(subject, PayoutRecallObject) \
        else f"{subject.object}.{subject.status}"
    if event_type != announced:
        # CardCo names each event after the status it announces; a disagreement is not evidence.
        return _unreadable("type-status-mismatch", body, document)
    return Notification(event_id=present(document.get("id")), event_type=event_type, subject=subject)


def from_detail(detail: dict[str, Any]) -> Notification | None:
    """The notification a stored event's :meth:`Notification.detail` describes, to apply it again
    later (seed 004: reconciliation applies "its verified outcome"); None for an unreadable one."""
    kind, event_type = detail.get("object"), detail.get("type")
    model = _MODELS.get(str(kind))
    if model is None or not isinstance(event_type, str):
        return None
    try:
        subject = model.model_validate(detail.get(str(kind)))
    except ValidationError:
        return None
    return Notification(event_id=present(detail.get("provider_event_id")), event_type=event_type, subject=subject)
