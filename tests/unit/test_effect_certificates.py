"""Effect certificates (seed 001, "The defensible claim"; API.md "Shapes"): Ed25519 over the RFC
8785 form of ``certificate``, any change refused, rotation keeping old certificates verifiable."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from gateway.domain.certificates import (
    CERTIFICATE_VERSION,
    STATEMENT,
    public_key_of,
    sign,
    verify,
)
from gateway.effects.certify import Certifier
from gateway.settings import CertificateKey

OLD_SEED, NEW_SEED = bytes(range(32)), bytes(range(32, 64))
CERTIFICATE: dict[str, Any] = {
    "certificate_version": CERTIFICATE_VERSION, "attempt_kind": "payout", "attempt_id": "5f0c-attempt",
    "payout_id": "PAY-3107", "rail": "cardco", "provider_account": "cardco:acct_store:test",
    "idempotency_key": "payout-PAY-3107-a1", "client_reference": "PAY-3107-a1", "amount_minor": "425000",
    "currency": "EUR", "effect_digest": "ab" * 32, "policy_digest": "cd" * 32, "approval_set_digest": "ef" * 32,
    "outcome": "EFFECT_CONFIRMED", "provider_reference": "po_123", "provider_status": "paid",
    "evidence_event_ids": [41, 42], "issued_at": "2026-11-29T16:00:05Z", "statement": STATEMENT,
}


def _keys(*pairs: tuple[str, bytes]) -> dict[str, bytes]:
    return {key_id: public_key_of(seed) for key_id, seed in pairs}


def _changed(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return "changed"
    if isinstance(value, int):
        return value + 1
    if isinstance(value, list):
        return [*value, 43]
    return value + "x"


def test_a_signed_certificate_verifies_and_survives_reserialization() -> None:
    """API.md: "re-serializing an unchanged certificate keeps it valid" (key order, spacing)."""
    document = sign(CERTIFICATE, key_id="k1", private_seed=OLD_SEED)
    reordered = json.loads(json.dumps({"signature": document["signature"], "certificate": dict(
        reversed(list(document["certificate"].items())))}, indent=4))
    assert verify(document, _keys(("k1", OLD_SEED)))
    assert verify(reordered, _keys(("k1", OLD_SEED))).reason == "valid"


def test_the_statement_says_it_does_not_prove_settlement() -> None:
    assert "does NOT prove settlement" in STATEMENT


@pytest.mark.parametrize("field", sorted(CERTIFICATE))
def test_changing_any_certificate_field_is_detected(field: str) -> None:
    document = sign(CERTIFICATE, key_id="k1", private_seed=OLD_SEED)
    tampered = copy.deepcopy(document)
    tampered["certificate"][field] = _changed(tampered["certificate"][field])
    verdict = verify(tampered, _keys(("k1", OLD_SEED)))
    assert not verdict and "altered" in verdict.reason


@pytest.mark.parametrize("change", ["add-field", "drop-field", "alg", "key_id-unknown", "key_id-other-key",
                                    "value", "value-not-base64", "extra-top-level"])
def test_changing_the_signature_or_the_shape_is_detected(change: str) -> None:
    document = sign(CERTIFICATE, key_id="k1", private_seed=OLD_SEED)
    tampered = copy.deepcopy(document)
    signature = tampered["signature"]
    if change == "add-field":
        tampered["certificate"]["note"] = "settled"
    elif change == "drop-field":
        del tampered["certificate"]["statement"]
    elif change == "alg":
        signature["alg"] = "HS256"
    elif change == "key_id-unknown":
        signature["key_id"] = "nobody"
    elif change == "key_id-other-key":
        signature["key_id"] = "k2"
    elif change == "value":
        raw = bytearray(base64.b64decode(signature["value"]))
        raw[0] ^= 1
        signature["value"] = base64.b64encode(bytes(raw)).decode()
    elif change == "value-not-base64":
        signature["value"] = "not base64!"
    else:
        tampered["extra"] = {}
    assert not verify(tampered, _keys(("k1", OLD_SEED), ("k2", NEW_SEED)))


def test_rotation_keeps_old_certificates_verifiable_and_signs_with_the_new_key() -> None:
    old = sign(CERTIFICATE, key_id="2026-10", private_seed=OLD_SEED)
    ring = Certifier((
        CertificateKey(key_id="2026-10", public_key=base64.b64encode(public_key_of(OLD_SEED)).decode()),
        CertificateKey(key_id="2026-11", private_key=base64.b64encode(NEW_SEED).decode(), active=True)))
    assert ring.key_id == "2026-11"
    assert [(k["key_id"], k["active"]) for k in ring.published()["keys"]] == [("2026-10", False), ("2026-11", True)]
    new = sign(CERTIFICATE, key_id="2026-11", private_seed=ring.active.private_bytes)  # type: ignore[union-attr]
    assert verify(old, ring.public_keys()) and verify(new, ring.public_keys())
    assert not verify(new, _keys(("2026-10", OLD_SEED)))


def test_a_document_that_is_not_a_certificate_is_refused_not_raised() -> None:
    for document in (None, [], {"certificate": {}}, {"certificate": [], "signature": {}}):
        assert not verify(document, _keys(("k1", OLD_SEED)))
