"""Effect certificates: what one confirmed effect's certificate says, its Ed25519 signature over
the RFC 8785 canonical JSON of ``certificate``, and offline verification (seed 001, "The
defensible claim"; API.md, "Shapes": ``{"certificate": {...}, "signature": {"alg": "Ed25519",
"key_id", "value"}}``).

A certificate proves that paygate recorded this effect digest as confirmed by the named provider
evidence, under a key it published. It does not prove settlement: "a signature on the record does
not establish bank settlement". Pure: no I/O; keys are raw 32-byte Ed25519 values.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from gateway.domain.canonical import NotCanonicalizable, canonical_json

CERTIFICATE_VERSION = "paygate.effect-certificate/1"
ALG = "Ed25519"
STATEMENT = (
    "paygate persisted this effect's canonical execution manifest (effect_digest, RFC 8785 JSON, "
    "SHA-256) before any provider call, sent only that manifest under its idempotency key, and "
    "recorded the provider evidence listed here as confirming the effect. This certificate does NOT "
    "prove settlement, finality or receipt of funds by any bank or beneficiary, nor that no later "
    "lifecycle event (refund, return, reversal) occurred."
)


def public_key_of(private_seed: bytes) -> bytes:
    """The raw public key of a raw 32-byte Ed25519 private key."""
    return Ed25519PrivateKey.from_private_bytes(private_seed).public_key().public_bytes_raw()


@functools.lru_cache(maxsize=16)
def _signing_key(private_seed: bytes) -> Ed25519PrivateKey:
    """The key object of a raw private key, made once per key (it derives the public key: ~40 us,
    as much as a signature)."""
    return Ed25519PrivateKey.from_private_bytes(private_seed)


def sign(certificate: dict[str, Any], *, key_id: str, private_seed: bytes) -> dict[str, Any]:
    """The signed document for ``certificate``."""
    value = _signing_key(private_seed).sign(canonical_json(certificate))
    return {"certificate": certificate,
            "signature": {"alg": ALG, "key_id": key_id, "value": base64.b64encode(value).decode("ascii")}}


@dataclass(frozen=True)
class Verification:
    valid: bool
    reason: str  # 'valid', or why not, for people: names the part that failed

    def __bool__(self) -> bool:
        return self.valid


def _refused(reason: str) -> Verification:
    return Verification(False, reason)


def verify(document: object, public_keys: Mapping[str, bytes]) -> Verification:
    """Whether ``document`` is a certificate signed by one of ``public_keys`` (key id -> raw key),
    unchanged since signing. Every structural doubt is a refusal, never an exception."""
    if not isinstance(document, dict) or set(document) != {"certificate", "signature"}:
        return _refused("the document must hold exactly 'certificate' and 'signature'")
    certificate, signature = document["certificate"], document["signature"]
    if not isinstance(certificate, dict) or not isinstance(signature, dict):
        return _refused("'certificate' and 'signature' must be objects")
    if set(signature) != {"alg", "key_id", "value"} or signature["alg"] != ALG:
        return _refused(f"the signature must be {{alg: {ALG}, key_id, value}}")
    key = public_keys.get(signature["key_id"]) if isinstance(signature["key_id"], str) else None
    if key is None:
        return _refused(f"unknown signing key {signature['key_id']!r}")
    try:
        value = base64.b64decode(str(signature["value"]), validate=True)
        Ed25519PublicKey.from_public_bytes(key).verify(value, canonical_json(certificate))
    except (binascii.Error, ValueError, InvalidSignature, NotCanonicalizable):
        return _refused("the signature does not match the certificate: it was altered or signed by another key")
    if certificate.get("certificate_version") != CERTIFICATE_VERSION:
        return _refused(f"unsupported certificate_version {certificate.get('certificate_version')!r}")
    return Verification(True, "valid")
