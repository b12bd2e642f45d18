"""Standard Webhooks, version 1, for what paygate itself sends (API.md "Provider notifications"
describes the scheme; seed 004 "Downstream Work": business effects are delivered to the merchant).

Signed content is ``{webhook-id}.{webhook-timestamp}.{raw body}``; the signature is
``v1,<base64 HMAC-SHA256>`` under the key bytes of a ``whsec_<base64>`` secret.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac


@functools.lru_cache(maxsize=8)
def _key(secret: str) -> bytes:
    """The key bytes of a ``whsec_`` secret (decoded once per secret, not per message)."""
    if not secret.startswith("whsec_"):
        raise ValueError("a Standard Webhooks secret starts with 'whsec_'")
    return base64.b64decode(secret.removeprefix("whsec_"))


def sign_v1(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` entry for one secret."""
    key = _key(secret)
    content = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
