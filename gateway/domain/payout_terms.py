"""The bound payout intent and its terms fingerprint (seed 000, "Bind the Exact Payout Before Policy").

The fingerprint says *what* is paid: tenant, beneficiary, destination and its version, amount,
currency and purpose. It is computed over a canonical serialization so that two services agree:
a fixed field order, the amount as a decimal string at the currency's minor-unit scale, an
upper-case ISO currency code, trimmed NFC-normalized strings and an explicit marker for an absent
value. Record versions (the payout's ``version``) are deliberately *not* part of it: approval moves
the payout from version 6 to 7 without changing what money moves where.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FINGERPRINT_SCHEME = "payout-terms/v1"
ABSENT = {"absent": True}  # an explicit marker, distinct from the empty string and from "null"

# ISO 4217 currencies whose minor unit is not 2 digits; every other code uses 2.
_MINOR_UNIT_EXCEPTIONS = {
    "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0,
    "RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
    "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3, "CLF": 4, "UYW": 4,
}


@dataclass(frozen=True)
class PayoutIntent:
    """The exact payout, built from the authoritative record and the authenticated actor."""

    payout_id: str
    tenant_id: str
    requester_id: str
    beneficiary_id: str
    destination_id: str
    destination_version: int
    amount_minor: int
    currency: str
    purpose: str | None
    payout_version: int  # the record version policy evaluates; not part of the fingerprint

    @property
    def terms_fingerprint(self) -> str:
        return fingerprint(self)


def minor_unit_digits(currency: str) -> int:
    return _MINOR_UNIT_EXCEPTIONS.get(currency.strip().upper(), 2)


def decimal_amount(amount_minor: int, currency: str) -> str:
    """``425000`` EUR -> ``"4250.00"``; ``4250`` JPY -> ``"4250"``; never a float."""
    digits = minor_unit_digits(currency)
    sign = "-" if amount_minor < 0 else ""
    whole, fraction = divmod(abs(amount_minor), 10**digits)
    return f"{sign}{whole}.{fraction:0{digits}d}" if digits else f"{sign}{whole}"


def _text(value: str | None) -> object:
    if value is None:
        return ABSENT
    return unicodedata.normalize("NFC", value).strip()


def canonical_terms(intent: PayoutIntent) -> str:
    """The canonical serialization: an ordered list of ``[field, value]`` pairs as compact JSON."""
    pairs = [
        ["scheme", FINGERPRINT_SCHEME],
        ["tenant_id", _text(intent.tenant_id)],
        ["beneficiary_id", _text(intent.beneficiary_id)],
        ["destination_id", _text(intent.destination_id)],
        ["destination_version", str(intent.destination_version)],
        ["amount", decimal_amount(intent.amount_minor, intent.currency)],
        ["currency", intent.currency.strip().upper()],
        ["purpose", _text(intent.purpose)],
    ]
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))


def fingerprint(intent: PayoutIntent) -> str:
    """``fp-`` plus the SHA-256 of the canonical terms, hex."""
    return "fp-" + hashlib.sha256(canonical_terms(intent).encode("utf-8")).hexdigest()


# The terms a payout record binds (API.md, Payouts: ``POST /v1/payouts`` and ``/submit``).
TERMS = ("beneficiary_id", "destination_id", "amount_minor", "currency", "purpose", "release_at")


def differing_terms(record: Mapping[str, Any], terms: Mapping[str, Any]) -> list[str]:
    """The names of the given terms that differ from the record (absent terms are not compared)."""
    return [name for name in TERMS if name in terms and terms[name] != record[name]]


def unbound_terms(record: Mapping[str, Any], terms: Mapping[str, Any], payout_id: str | None) -> list[str]:
    """What a ``/submit`` body states differently from the payout record it binds (seed 000, "Bind
    the Exact Payout Before Policy": the intent comes from the record, never from the body); empty
    when the body agrees. A different ``payout_id`` is a difference too."""
    return differing_terms(record, terms) or (["payout_id"] if payout_id not in (None, record["payout_id"]) else [])
