"""Seed 000, section 4: the terms fingerprint covers the material terms over a canonical
serialization (fixed order, minor-unit decimal strings, upper-case currency, trimmed NFC strings,
explicit absent markers) and excludes the payout version."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.domain.payout_terms import (
    PayoutIntent,
    canonical_terms,
    decimal_amount,
    fingerprint,
)

INTENT = PayoutIntent(payout_id="PAY-3107", tenant_id="T-0417", requester_id="clerk-22", beneficiary_id="BEN-2208",
                      destination_id="DST-77", destination_version=3, amount_minor=425_000, currency="EUR",
                      purpose="supplier-invoice INV-9031", payout_version=6)


def test_the_canonical_form_is_fixed_and_recorded() -> None:
    assert canonical_terms(INTENT) == (
        '[["scheme","payout-terms/v1"],["tenant_id","T-0417"],["beneficiary_id","BEN-2208"],'
        '["destination_id","DST-77"],["destination_version","3"],["amount","4250.00"],["currency","EUR"],'
        '["purpose","supplier-invoice INV-9031"]]')


def test_the_payout_version_and_requester_are_not_terms() -> None:
    assert fingerprint(replace(INTENT, payout_version=7, requester_id="approver-7")) == fingerprint(INTENT)


@pytest.mark.parametrize("change", [{"amount_minor": 425_001}, {"currency": "USD"}, {"destination_version": 4},
                                    {"beneficiary_id": "BEN-1"}, {"purpose": "other"}, {"purpose": None},
                                    {"purpose": ""}, {"tenant_id": "T-1"}])
def test_every_material_term_changes_the_fingerprint(change: dict[str, object]) -> None:
    assert fingerprint(replace(INTENT, **change)) != fingerprint(INTENT)  # type: ignore[arg-type]


def test_normalization_makes_equivalent_spellings_agree() -> None:
    decomposed = replace(INTENT, purpose="  Cafe\u0301 invoice ", currency="eur")
    composed = replace(INTENT, purpose="Caf\u00e9 invoice", currency="EUR")
    assert fingerprint(decomposed) == fingerprint(composed)


@pytest.mark.parametrize(("minor", "currency", "text"), [(425_000, "EUR", "4250.00"), (5, "EUR", "0.05"),
                                                         (4250, "JPY", "4250"), (1234, "KWD", "1.234")])
def test_amounts_are_decimal_strings_at_the_minor_unit_scale(minor: int, currency: str, text: str) -> None:
    assert decimal_amount(minor, currency) == text
