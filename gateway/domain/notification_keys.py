"""Notification deduplication keys (seed 004, "Notification Deduplication").

A key, when there is one, is unique per verified provider account (``uq_notification``):

1. the provider's event id (the payload's ``id``) when present and not blank;
2. else, only where the account's configuration says its event semantics allow it
   (``synthesized_notification_keys``), ``v1:`` + the SHA-256 of a canonical representation of
   stable business fields: provider payment id, client reference, event type, status, amount,
   currency and the provider's sequence number. Per-delivery values (delivery timestamp,
   signature, ``webhook-id``) never take part, so a redelivery gets the same key; the sequence
   keeps two notifications that report the same status apart;
3. else, only where the account says its delivery id is stable (``webhook_id_stable``), the
   ``webhook-id``, prefixed ``webhook-id:`` so it can never equal an event id;
4. else None: each delivery is recorded separately.

Empty or whitespace values count as missing before any key is built (an empty id would make every
such notification share one key). The canonical fields are stored in the event's detail, so a
change of algorithm is a backfill migration (docs/decisions/0010-synthesized-notification-keys.md).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass

SYNTHESIZED_VERSION = "v1"
WEBHOOK_ID_PREFIX = "webhook-id:"


def present(value: object) -> str | None:
    """``value`` as trimmed, NFC-normalized text, or None when missing, not text, or blank."""
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFC", value).strip()
    return text or None


@dataclass(frozen=True)
class CanonicalFields:
    """The stable business fields a synthesized key is computed from, already canonical:
    identifiers trimmed and NFC-normalized (case kept: provider ids are case-sensitive), event
    type and status lower-case, currency upper-case, numbers as integers."""

    provider_payment_id: str | None
    client_reference: str | None
    event_type: str | None
    status: str | None
    amount_minor: int | None
    currency: str | None
    sequence: int | None

    @classmethod
    def of(cls, *, provider_payment_id: object, client_reference: object, event_type: object, status: object,
           amount_minor: object, currency: object, sequence: object) -> CanonicalFields:
        type_text, status_text, currency_text = present(event_type), present(status), present(currency)
        return cls(
            provider_payment_id=present(provider_payment_id),
            client_reference=present(client_reference),
            event_type=type_text.lower() if type_text else None,
            status=status_text.lower() if status_text else None,
            amount_minor=_integer(amount_minor),
            currency=currency_text.upper() if currency_text else None,
            sequence=_integer(sequence),
        )

    def as_detail(self) -> dict[str, object]:
        # The fields are flat (text, integers, None): a copy of them, without asdict's deep copy,
        # which costs more than the rest of a duplicate's handling in Python.
        return dict(vars(self))

    def canonical_text(self) -> str:
        """Sorted keys, no insignificant whitespace, non-ASCII kept as NFC text: the same logical
        notification gives the same text on every deployment."""
        return json.dumps(self.as_detail(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _integer(value: object) -> int | None:
    # bool is an int in Python but never an amount or a sequence.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def synthesized_key(fields: CanonicalFields) -> str | None:
    """``v1:<sha256 hex>``, or None when the fields cannot name one logical event: without the
    provider payment id, the event type or the sequence, two distinct notifications (a payment
    entering the same status twice) could collide."""
    if fields.provider_payment_id is None or fields.event_type is None or fields.sequence is None:
        return None
    digest = hashlib.sha256(fields.canonical_text().encode("utf-8")).hexdigest()
    return f"{SYNTHESIZED_VERSION}:{digest}"


def notification_key(*, event_id: object, webhook_id: object, fields: CanonicalFields | None,
                     synthesize: bool, webhook_id_stable: bool) -> str | None:
    """The deduplication key in the order of the module docstring, or None."""
    provider_event_id = present(event_id)
    if provider_event_id is not None:
        return provider_event_id
    if synthesize and fields is not None:
        synthesized = synthesized_key(fields)
        if synthesized is not None:
            return synthesized
    delivery_id = present(webhook_id)
    if webhook_id_stable and delivery_id is not None:
        return WEBHOOK_ID_PREFIX + delivery_id
    return None


def escalation_key(account: str, problem: str, *, notification_key: str | None, provider_object_id: str | None,
                   client_reference: str | None) -> str:
    """``notification:<account>:<subject>:<problem>`` for a notification no single attempt can
    take (seed 004, "Escalations"): the subject is the notification key, else the provider's
    object id, else the client reference; with none of them, one coarse episode per account and
    problem, ``notification:<account>:<problem>-unidentified``, never a per-delivery value that
    would open a new episode for every delivery."""
    subject = notification_key or provider_object_id or client_reference
    if subject is None:
        return f"notification:{account}:{problem}-unidentified"
    return f"notification:{account}:{subject}:{problem}"
