"""CardCo's signature scheme: Standard Webhooks v1 and v1a (API.md "Provider notifications";
NOTES.md "Standard Webhooks"; seed 004, "The Notification Handler": the provider account comes from
the verified context, such as which configured secret validated the signature, never from a payload
field). What a verification answers is provider-neutral: gateway.domain.webhook_verdicts.

Signed content is ``{webhook-id}.{webhook-timestamp}.{raw body bytes}``, the bytes exactly as
received (a body that is not UTF-8 verifies like any other). ``webhook-signature`` holds
space-separated entries; any one valid ``v1,<base64 HMAC-SHA256>`` under one of an account's
``whsec_`` secrets, or ``v1a,<base64 Ed25519>`` under one of its ``whpk_`` public keys, verifies,
so secrets rotate without downtime. The ``svix-*`` header names are accepted as aliases. The
timestamp is integer unix seconds within 300 s of the injected clock's now, either way. Every
missing or malformed header is a rejection (a 401), never an exception.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gateway.domain.webhook_verdicts import SIGNATURE_INVALID, TIMESTAMP_OUT_OF_TOLERANCE, Rejected, Verified

TOLERANCE_S = 300
HEADER_PREFIXES = ("webhook-", "svix-")
# Entries beyond this many are not looked at: a header cannot make verification arbitrarily slow.
MAX_ENTRIES = 16
_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_ID = re.compile(r"^[\x21-\x7e]{1,256}$")


@dataclass(frozen=True)
class AccountKeys:
    """One provider account's verification material, decoded once from its configuration."""

    account_id: str
    hmac_keys: tuple[bytes, ...]
    public_keys: tuple[Ed25519PublicKey, ...]

    @classmethod
    def from_config(cls, account_id: str, secrets: Sequence[str], public_keys: Sequence[str]) -> AccountKeys:
        """``whsec_<base64>`` secrets and ``whpk_<base64 of 32 bytes>`` keys; ValueError if malformed."""
        try:
            hmac_keys = tuple(base64.b64decode(s.removeprefix("whsec_"), validate=True) for s in secrets)
            raw_public = [base64.b64decode(k.removeprefix("whpk_"), validate=True) for k in public_keys]
        except binascii.Error as error:
            raise ValueError(f"account {account_id}: a webhook secret or public key is not base64") from error
        if any(len(raw) != 32 for raw in raw_public):
            raise ValueError(f"account {account_id}: a whpk_ public key must decode to 32 bytes")
        return cls(account_id, hmac_keys, tuple(Ed25519PublicKey.from_public_bytes(raw) for raw in raw_public))


def _header(lowered: Mapping[str, str], name: str) -> str | None:
    """``webhook-<name>``, else ``svix-<name>``."""
    for prefix in HEADER_PREFIXES:
        if prefix + name in lowered:
            return lowered[prefix + name].strip()
    return None


def _entries(signature: str) -> list[tuple[str, bytes]]:
    """``(version, decoded signature)`` for every well-formed entry; malformed ones are skipped."""
    entries = []
    for token in signature.split()[:MAX_ENTRIES]:
        version, comma, value = token.partition(",")
        if not comma or version not in ("v1", "v1a"):
            continue
        try:
            entries.append((version, base64.b64decode(value, validate=True)))
        except binascii.Error:
            continue
    return entries


def _matches(keys: AccountKeys, entries: list[tuple[str, bytes]], content: bytes) -> bool:
    for version, signature in entries:
        if version == "v1":
            for key in keys.hmac_keys:
                if hmac.compare_digest(hmac.new(key, content, hashlib.sha256).digest(), signature):
                    return True
        else:
            for public_key in keys.public_keys:
                try:
                    public_key.verify(signature, content)
                    return True
                except InvalidSignature:
                    continue
    return False


def verify(headers: Mapping[str, str], body: bytes, accounts: Sequence[AccountKeys],
           now: datetime) -> Verified | Rejected:
    """Which of ``accounts`` signed this request, or why it is rejected (see the module docstring).

    The timestamp is checked before any key is tried, as the reference libraries do; a stale but
    otherwise valid request is ``timestamp_out_of_tolerance``.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    webhook_id, timestamp, signature = (_header(lowered, name) for name in ("id", "timestamp", "signature"))
    if not webhook_id or not timestamp or not signature:
        return Rejected(SIGNATURE_INVALID, "missing webhook-id, webhook-timestamp or webhook-signature")
    if not _ID.match(webhook_id):
        return Rejected(SIGNATURE_INVALID, "malformed webhook-id")
    if not _TIMESTAMP.match(timestamp):
        return Rejected(SIGNATURE_INVALID, "webhook-timestamp must be integer unix seconds")
    sent_at = int(timestamp)
    if abs(now.timestamp() - sent_at) > TOLERANCE_S:
        return Rejected(TIMESTAMP_OUT_OF_TOLERANCE, "webhook-timestamp is more than 300 s from now")
    entries = _entries(signature)
    if not entries:
        return Rejected(SIGNATURE_INVALID, "no well-formed v1 or v1a signature entry")
    content = f"{webhook_id}.{timestamp}.".encode() + body
    for keys in accounts:
        if _matches(keys, entries, content):
            return Verified(keys.account_id, webhook_id, sent_at)
    return Rejected(SIGNATURE_INVALID, "no signature entry verifies under the endpoint's keys")
