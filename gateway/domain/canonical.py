"""Canonical JSON and digests (seed 001, "The intent record": ``d := SHA256(JCS(M))``).

RFC 8785 (JSON Canonicalization Scheme) through the maintained ``rfc8785`` package, never a
hand-written serializer: keys sorted by UTF-16 code units, ECMAScript number formatting, minimal
string escaping, no insignificant whitespace. The same bytes are what effect digests commit to and
what certificate signatures cover (API.md, "Shapes": "the signature over the RFC 8785 canonical
JSON of ``certificate``").
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


class NotCanonicalizable(ValueError):
    """The value has no RFC 8785 form (a NaN or infinity, an integer beyond I-JSON, a non-JSON type)."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of ``value``."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as error:
        raise NotCanonicalizable(str(error)) from None


def digest(value: Any) -> bytes:
    """SHA-256 over the canonical bytes: 32 bytes, the length every digest column checks."""
    return hashlib.sha256(canonical_json(value)).digest()
