"""The common evidence every provider adapter reads its answers into (the seam; seed 004,
"The Notification Handler": evidence holds identifiers, amounts, currency and reason codes).

A provider's payment object, payout, recall or refund, whatever its wire shape, becomes one of
these records with the provider's id, the attempt's client reference, the amount in minor units,
the upper-case currency and a status in the common vocabulary of its kind. ``native_status`` keeps
the provider's own word where it differs (a Stripe PaymentIntent's ``requires_payment_method``),
and that is what the attempt's ``provider_status`` shows. Everything above the seam
(``gateway.providers``) sees only these shapes; each adapter's pure module maps its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from gateway.domain.attempts import Evidence, Finding
from gateway.domain.notification_keys import CanonicalFields, present

# A payment object's common statuses and what each one means for an attempt.
PAYMENT_STATUSES: dict[str, Finding] = {
    "succeeded": "succeeded",
    "processing": "processing",
    "requires_action": "requires_action",
    "failed": "failed",
    "refunded": "refunded",
}


class NextAction(BaseModel):
    """The customer action the provider waits for, as the checkout page needs it."""

    model_config = ConfigDict(extra="allow")

    type: str
    expires_at: datetime | None = None


class RefundReference(BaseModel):
    """The refund a ``refunded`` payment names (CardCo's refund extension, docs/decisions/0021)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    client_reference: str = Field(min_length=1)


class PaymentObject(BaseModel):
    """A provider's payment in the common shape; extra fields are tolerated, missing required ones are not."""

    model_config = ConfigDict(extra="ignore")

    object: Literal["payment"]
    id: str = Field(min_length=1)
    client_reference: str | None = None
    amount_minor: int
    currency: str
    status: str
    failure_code: str | None = None
    next_action: NextAction | None = None
    sequence: int | None = None
    refund: RefundReference | None = None
    native_status: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_native_status(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A provider whose statuses are the common ones (CardCo) keeps exactly its own shape.
        dumped: dict[str, Any] = handler(self)
        if dumped.get("native_status") is None:
            dumped.pop("native_status", None)
        return dumped


class PayoutObject(PaymentObject):
    """A payout: the same identity, money and status fields as a payment. Every other field (its
    destination token above all) is ignored, never read into memory we keep."""

    object: Literal["payout"]  # type: ignore[assignment]


class PayoutRecallObject(PaymentObject):
    """A payout recall (CardCo's ``prc_...``): identity, money and status like a payout's."""

    object: Literal["payout_recall"]  # type: ignore[assignment]


class RefundObject(PaymentObject):
    """A refund: its own id and reference, the refunded payment, and the amount and currency returned."""

    object: Literal["refund"]  # type: ignore[assignment]
    payment: str


MODELS: dict[str, type[PaymentObject]] = {"payment": PaymentObject, "payout": PayoutObject,
                                          "payout_recall": PayoutRecallObject, "refund": RefundObject}



def object_evidence(account: str, payment: PaymentObject, **details: Any) -> Evidence:
    """Evidence from a payment object (a create answer, a lookup result or a notification's object)."""
    finding = PAYMENT_STATUSES.get(payment.status)
    if finding is None:
        undocumented = payment.native_status or payment.status
        return Evidence.unknown(account, f"provider.undocumented-status.{undocumented}", **details)
    action = payment.next_action if finding == "requires_action" else None
    return Evidence(
        finding=finding,
        provider_account=account,
        reason=payment.failure_code if finding == "failed" else None,
        provider_id=payment.id,
        provider_status=payment.native_status or payment.status,
        next_action=action.model_dump(mode="json") if action else None,
        next_action_expires_at=action.expires_at if action else None,
        amount_minor=payment.amount_minor,
        currency=payment.currency,
        details={**details, "sequence": payment.sequence},
    )


LookupOutcome = Literal["found", "not-found", "failed", "rate-limited", "ambiguous"]


@dataclass(frozen=True)
class Lookup:
    """What a non-mutating lookup established. A failed lookup (transport error, 5xx, unreadable
    answer) and a 429 are never "not found" (seed 004, "The Recovery Loop")."""

    outcome: LookupOutcome
    payment: PaymentObject | None = None
    reason: str | None = None
    retry_after_s: float | None = None
    request_id: str | None = None  # the provider's id of the lookup request (Stripe's ``Request-Id``)


def lookup_answer(status_code: int, body: bytes, retry_after: str | None, *, listing: bool,
                  read: Callable[[Any], PaymentObject]) -> Lookup:
    """Classify a lookup's answer: by id (``listing`` False: 404 is "not found"), or by client
    reference (a ``{"data": [...]}`` list: empty is "not found", two or more "ambiguous"); each
    object read into the common shape by the provider's ``read``. A 429 is "rate-limited", every
    other failure "failed", never "not found" (seed 004, "The Recovery Loop")."""
    if status_code == 429:
        return Lookup("rate-limited", reason="provider.rate-limited", retry_after_s=retry_after_s(retry_after))
    if status_code == 404 and not listing:
        return Lookup("not-found")
    if status_code != 200:
        return Lookup("failed", reason=f"provider.lookup-status-{status_code}")
    try:
        document = json.loads(body.decode("utf-8"))
        if not listing:
            return Lookup("found", read(document))
        found = [read(item) for item in document["data"]]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, ValidationError):
        return Lookup("failed", reason="provider.lookup-unreadable")
    if not found:
        return Lookup("not-found")
    if len(found) > 1:
        return Lookup("ambiguous", reason="provider.lookup-ambiguous")
    return Lookup("found", found[0])


def retry_after_s(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds, or None when absent or not a number."""
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Notification:
    """A readable, verified notification about one payment, payout, recall or refund."""

    event_id: str | None
    event_type: str
    subject: PaymentObject  # a PayoutObject for payouts, a PayoutRecallObject for recalls
    # The API version the provider rendered the event in, when the event says (Stripe's ``api_version``).
    api_version: str | None = None
    # The connected account the event happened on (Stripe Connect's ``account``); None: the platform's own.
    connected_account: str | None = None

    @property
    def kind(self) -> Literal["payment", "payout", "payout_recall", "refund"]:
        return self.subject.object

    @property
    def payment(self) -> PaymentObject | None:
        return self.subject if self.kind == "payment" else None

    # Derived once per notification (the handler reads each several times: key, matching, detail).
    @functools.cached_property
    def provider_object_id(self) -> str | None:
        return present(self.subject.id)

    @functools.cached_property
    def client_reference(self) -> str | None:
        return present(self.subject.client_reference)

    def canonical_fields(self) -> CanonicalFields:
        return self._canonical

    @functools.cached_property
    def _canonical(self) -> CanonicalFields:
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
                "canonical": self.canonical_fields().as_detail(),
                **({"api_version": self.api_version} if self.api_version is not None else {}),
                **({"connected_account": self.connected_account} if self.connected_account is not None else {})}


def refund_evidence(notification: Notification) -> Notification | None:
    """A refunded payment seen as evidence about the refund that did it: the same event, its
    subject the refund the payment names (succeeded, for the payment's amount), so a refund attempt
    is matched by its own reference ``<order_id>-r<N>`` and provider id like any attempt kind. None
    for any other event, and for a refund the payment does not name (one made outside the gateway)."""
    if notification.kind == "refund":  # a provider that announces refunds as themselves (Stripe's refund.*)
        return notification
    payment = notification.payment
    if payment is None or payment.status != "refunded" or payment.refund is None:
        return None
    return Notification(event_id=notification.event_id, event_type=notification.event_type, subject=RefundObject(
        object="refund", id=payment.refund.id, client_reference=payment.refund.client_reference,
        amount_minor=payment.amount_minor, currency=payment.currency, status="succeeded",
        sequence=payment.sequence, payment=payment.id), api_version=notification.api_version,
        connected_account=notification.connected_account)


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


def unreadable(reason: str, body: bytes, document: Any = None) -> Unreadable:
    fields = document if isinstance(document, dict) else {}
    event_type = fields.get("type")
    return Unreadable(reason=reason, event_id=present(fields.get("id")),
                      event_type=event_type[:100] if isinstance(event_type, str) else None,
                      body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))


def event_envelope(body: bytes, types: Collection[str]) -> tuple[dict[str, Any], str] | Unreadable:
    """A verified event's document and type, ``{"id", "type", "data": {"object": {...}}}``, when the
    body is JSON of that shape and its type one of ``types``; else why it is unreadable."""
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return unreadable("malformed-json", body)
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        return unreadable("malformed-payload", body, document)
    event_type = document.get("type")
    if not isinstance(event_type, str) or event_type not in types:
        return unreadable("unknown-type", body, document)
    return document, event_type


def from_detail(detail: dict[str, Any]) -> Notification | None:
    """The notification a stored event's :meth:`Notification.detail` describes, to apply it again
    later (seed 004: reconciliation applies "its verified outcome"); None for an unreadable one."""
    kind, event_type = detail.get("object"), detail.get("type")
    model = MODELS.get(str(kind))
    if model is None or not isinstance(event_type, str):
        return None
    try:
        subject = model.model_validate(detail.get(str(kind)))
    except ValidationError:
        return None
    version, connected = detail.get("api_version"), detail.get("connected_account")
    return Notification(event_id=present(detail.get("provider_event_id")), event_type=event_type, subject=subject,
                        api_version=version if isinstance(version, str) else None,
                        connected_account=connected if isinstance(connected, str) else None)
