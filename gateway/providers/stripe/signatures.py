"""Stripe's signature scheme: the ``Stripe-Signature`` header (Stripe's "Check the webhook
signatures"; seed 004, "The Notification Handler"). Pure: no I/O. What a verification answers is
provider-neutral: gateway.domain.webhook_verdicts.

The header holds ``t=<unix seconds>`` and one or more ``v1=<hex HMAC-SHA256>``
entries (``v0`` and unknown schemes are ignored), comma-separated. The signed content is
``{t}.{raw body}``, the bytes exactly as received; the key is the endpoint secret exactly as Stripe
shows it (``whsec_...``, UTF-8, not decoded). Any one ``v1`` entry valid under any one of the
account's secrets verifies, so an endpoint secret is rolled without downtime (Stripe signs with the
old and the new secret while both are active). The timestamp must be within 300 s of the injected
clock's now, either way; every missing or malformed header is a rejection (a 401), never an
exception. The account is the one whose secret verified, never a payload field (seed 004).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway.domain.webhook_verdicts import SIGNATURE_INVALID, TIMESTAMP_OUT_OF_TOLERANCE, Rejected, Verified

TOLERANCE_S = 300
HEADER = "stripe-signature"
# Entries beyond this many are not looked at: a header cannot make verification arbitrarily slow.
MAX_ENTRIES = 16
_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")


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
