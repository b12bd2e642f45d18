"""Canonical JSON and digests (seed 001, "The intent record": ``d := SHA256(JCS(M))``).

RFC 8785 (JSON Canonicalization Scheme) through the maintained ``rfc8785`` package, or orjson where
its bytes are the same (:func:`canonical_json`), never a hand-written serializer: keys
sorted by UTF-16 code units, ECMAScript number formatting, minimal string escaping, no insignificant
whitespace. The same bytes are what effect digests commit to and what certificate signatures cover
(API.md, "Shapes": "the signature over the RFC 8785 canonical JSON of ``certificate``").
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import rfc8785


class NotCanonicalizable(ValueError):
    """The value has no RFC 8785 form (a NaN or infinity, an integer beyond I-JSON, a non-JSON type)."""


# I-JSON's exact integers (RFC 8785 section 3.2.2.3 serialises numbers as IEEE 754 doubles).
_LARGEST_EXACT = 2**53 - 1


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only what orjson serialises exactly as RFC 8785 does: objects with
    ASCII keys (sorted by code point, which is UTF-16 order for ASCII), arrays, strings (orjson
    and RFC 8785 both escape only the quote, the backslash and the controls, the controls as
    \\b \\t \\n \\f \\r or lowercase \\u00xx, and write the rest as UTF-8), exact integers,
    booleans and null. Numbers that are not exact integers are left to rfc8785."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_LARGEST_EXACT <= value <= _LARGEST_EXACT)
    if kind is dict:
        return all(type(key) is str and key.isascii() and _plain(item) for key, item in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    return False


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of ``value``: through orjson for the values it writes
    identically (:func:`_plain`; the pure-Python rfc8785 took ~85 us per certificate, twice a
    checkout's database round trip), through rfc8785 for everything else and every error."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # e.g. a lone surrogate: rfc8785 decides
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as error:
        raise NotCanonicalizable(str(error)) from None


def digest(value: Any) -> bytes:
    """SHA-256 over the canonical bytes: 32 bytes, the length every digest column checks."""
    return hashlib.sha256(canonical_json(value)).digest()
