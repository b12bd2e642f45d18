"""Stripe webhooks: the ``Stripe-Signature`` header and the event payload (issue 16; Stripe's
"Check the webhook signatures" and the Event object). Pure: no I/O.

Verification: the header holds ``t=<unix seconds>`` and one or more ``v1=<hex HMAC-SHA256>``
entries (``v0`` and unknown schemes are ignored), comma-separated. The signed content is
``{t}.{raw body}``, the bytes exactly as received; the key is the endpoint secret exactly as Stripe
shows it (``whsec_...``, UTF-8, not decoded). Any one ``v1`` entry valid under any one of the
account's secrets verifies, so an endpoint secret is rolled without downtime (Stripe signs with the
old and the new secret while both are active). The timestamp must be within 300 s of the injected
clock's now, either way; every missing or malformed header is a rejection (a 401), never an
exception. The account is the one whose secret verified, never a payload field (seed 004).

Parsing: ``payment_intent.*``, ``charge.refunded``, ``refund.*`` and ``payout.*`` events become the common
:class:`~gateway.domain.provider_evidence.Notification`, keyed by the event id (Stripe events always
carry one). The event's object is read into the common shape (gateway.domain.stripe); an event whose
type does not agree with its object's status is not evidence (``type-status-mismatch``). Every other
type is recorded and escalated (``unknown-type``): README, "Stripe", lists the events to enable.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
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
from gateway.domain.webhook_verdicts import SIGNATURE_INVALID, TIMESTAMP_OUT_OF_TOLERANCE, Rejected, Verified
from gateway.providers.stripe.answers import payment_intent, record

TOLERANCE_S = 300
HEADER = "stripe-signature"
# Entries beyond this many are not looked at: a header cannot make verification arbitrarily slow.
MAX_ENTRIES = 16
_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")

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


@dataclass(frozen=True)
class EndpointSecrets:
    """One account's endpoint secrets (several while one is being rolled)."""

    account_id: str
    secrets: tuple[bytes, ...]


def _signature(lowered: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """The header's ``t`` value and its ``v1`` entries (malformed items are skipped)."""
    timestamp, entries = None, []
    for item in lowered.get(HEADER, "").split(",")[:MAX_ENTRIES]:
        name, equals, value = item.strip().partition("=")
        if not equals:
            continue
        if name == "t" and timestamp is None:
            timestamp = value
        elif name == "v1" and _HEX_SHA256.match(value):
            entries.append(value)
    return timestamp, entries


def verify(headers: Mapping[str, str], body: bytes, accounts: Sequence[EndpointSecrets],
           now: datetime) -> Verified | Rejected:
    """Which of ``accounts`` signed this request, or why it is rejected (the module docstring).
    The timestamp is checked before any secret is tried, as Stripe's libraries do."""
    lowered = {key.lower(): value for key, value in headers.items()}
    if HEADER not in lowered:
        return Rejected(SIGNATURE_INVALID, "missing Stripe-Signature")
    timestamp, entries = _signature(lowered)
    if timestamp is None or not _TIMESTAMP.match(timestamp):
        return Rejected(SIGNATURE_INVALID, "Stripe-Signature has no integer t=")
    sent_at = int(timestamp)
    if abs(now.timestamp() - sent_at) > TOLERANCE_S:
        return Rejected(TIMESTAMP_OUT_OF_TOLERANCE, "Stripe-Signature t= is more than 300 s from now")
    if not entries:
        return Rejected(SIGNATURE_INVALID, "no well-formed v1 signature entry")
    content = f"{timestamp}.".encode() + body
    for account in accounts:
        for secret in account.secrets:
            expected = hmac.new(secret, content, hashlib.sha256).hexdigest()
            if any(hmac.compare_digest(expected, entry) for entry in entries):
                # Stripe has no delivery id: the event id in the body is the key (webhook_id unused).
                return Verified(account.account_id, "", sent_at)
    return Rejected(SIGNATURE_INVALID, "no v1 entry verifies under the endpoint's secrets")


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
    return Notification(event_id=present(document.get("id")), event_type=event_type, subject=subject)
