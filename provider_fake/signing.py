"""Standard Webhooks signatures, version 1 (and v1a where an Ed25519 key is configured).

API.md "Provider notifications": signed content is `{webhook-id}.{webhook-timestamp}.{raw body}`;
`webhook-signature` is space-separated `v1,<base64 HMAC-SHA256>` entries, one per secret, so a
receiver keeps verifying while secrets rotate. A `whsec_` secret's key bytes are the base64
decoding of what follows the prefix. `v1a,<base64 Ed25519 signature>` signs the same content
(NOTES.md "Standard Webhooks").
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def signed_content(msg_id: str, timestamp: int, body: bytes) -> bytes:
    return f"{msg_id}.{timestamp}.".encode() + body


def sign_v1(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, signed_content(msg_id, timestamp, body), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def sign_v1a(key: Ed25519PrivateKey, msg_id: str, timestamp: int, body: bytes) -> str:
    return "v1a," + base64.b64encode(key.sign(signed_content(msg_id, timestamp, body))).decode()


def signature_header(
    secrets: list[str],
    signing_key: Ed25519PrivateKey | None,
    msg_id: str,
    timestamp: int,
    body: bytes,
) -> str:
    """The `webhook-signature` value: one v1 entry per secret, then v1a when a key is given."""
    entries = [sign_v1(secret, msg_id, timestamp, body) for secret in secrets]
    if signing_key is not None:
        entries.append(sign_v1a(signing_key, msg_id, timestamp, body))
    return " ".join(entries)
