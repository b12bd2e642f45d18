"""A payout recall's canonical execution manifest (seed 001 over docs/decisions/0015): operation
``payout.recall``, the recalled provider payout id, reference, key and ``expires_at`` committed;
any drift is a different digest; a destination token is never admitted."""

from __future__ import annotations

import pytest

from gateway.domain.effect_manifest import ManifestUnbuildable, Transport, effect_digest, recall_manifest

TRANSPORT = Transport("cardco:acct_store:test", "http://cardco.test/v1/payouts/po_1/recalls", "2026-11-01",
                      "recall-PAY-1-r1")
BODY = b'{"client_reference":"PAY-1-r1","expires_at":"2026-11-29T10:05:00Z"}'


def _manifest(body: bytes = BODY, provider_payout_id: str = "po_1") -> dict[str, object]:
    return recall_manifest(TRANSPORT, body, provider_payout_id=provider_payout_id, amount_minor=4250,
                           currency="EUR")


def test_a_recall_manifest_names_the_operation_the_recalled_payout_and_expires_at() -> None:
    manifest = _manifest()
    assert (manifest["attempt_kind"], manifest["operation"], manifest["idempotency_key"],
            manifest["client_reference"], manifest["amount_minor"]) == \
        ("payout_recall", "payout.recall", "recall-PAY-1-r1", "PAY-1-r1", "4250")
    assert manifest["business_fields"] == {"client_reference": "PAY-1-r1", "expires_at": "2026-11-29T10:05:00Z",
                                           "provider_payout_id": "po_1", "amount_minor": "4250", "currency": "EUR"}


def test_any_drift_is_a_different_digest() -> None:
    digest = effect_digest(_manifest())
    assert effect_digest(_manifest()) == digest
    assert effect_digest(_manifest(provider_payout_id="po_2")) != digest
    assert effect_digest(_manifest(BODY.replace(b"10:05", b"10:06"))) != digest


@pytest.mark.parametrize("body", [b'{"client_reference":"PAY-1-r1","expires_at":"x","destination_token":"t"}',
                                  b'{"client_reference":"PAY-1-r1"}', b"[]", b"not json"])
def test_a_recall_request_with_a_token_or_without_expires_at_is_unbuildable(body: bytes) -> None:
    with pytest.raises(ManifestUnbuildable):
        _manifest(body)
