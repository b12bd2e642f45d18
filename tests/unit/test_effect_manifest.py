"""Canonical execution manifests (seed 001, "Stable identity and exact bytes"): the digest commits
to what a send carries, a drifted body is a different digest, a payout names its destination by id
and version and never by token (DESIGN invariant 8)."""

from __future__ import annotations

import json

import pytest

from gateway.domain.effect_manifest import (
    ManifestUnbuildable,
    Transport,
    approval_set_document,
    effect_digest,
    payment_manifest,
    payout_manifest,
)

TRANSPORT = Transport("cardco:acct_store:test", "http://cardco.test/v1/payments", "2026-11-01", "k-1")
BODY = '{"amount_minor":4250,"currency":"EUR","payment_method":"pm_card_visa","client_reference":"ORD-1-a1"}'


def test_a_payment_manifest_names_everything_a_send_carries() -> None:
    manifest = payment_manifest(TRANSPORT, BODY)
    assert (manifest["rail"], manifest["operation"], manifest["amount_minor"], manifest["client_reference"]) == \
        ("cardco", "create_payment", "4250", "ORD-1-a1")
    assert manifest["business_fields"]["payment_method"] == "pm_card_visa"
    assert effect_digest(manifest) == effect_digest(payment_manifest(TRANSPORT, BODY))


@pytest.mark.parametrize("drifted", [
    BODY.replace("4250", "4251"), BODY.replace("EUR", "USD"), BODY.replace("pm_card_visa", "pm_card_other"),
    BODY.replace(":", ": "),  # same JSON, other bytes: still another request
])
def test_any_drift_in_the_stored_body_changes_the_digest(drifted: str) -> None:
    assert effect_digest(payment_manifest(TRANSPORT, drifted)) != effect_digest(payment_manifest(TRANSPORT, BODY))


@pytest.mark.parametrize("body", ["not json", "[1]", '{"currency":"EUR","client_reference":"x"}',
                                  '{"amount_minor":"1","currency":"EUR","client_reference":"x"}'])
def test_a_body_that_is_not_a_payment_is_unbuildable(body: str) -> None:
    with pytest.raises(ManifestUnbuildable):
        payment_manifest(TRANSPORT, body)


def test_a_payout_manifest_never_holds_the_destination_token() -> None:
    body = json.dumps({"amount_minor": 425000, "currency": "EUR", "destination_token": "dst_tok_secret_77",
                       "client_reference": "PAY-1-a1", "expires_at": "2026-11-29T16:05:00Z"}).encode()
    manifest = payout_manifest(TRANSPORT, body, destination_id="DST-77", destination_version=3)
    assert "dst_tok_secret_77" not in json.dumps(manifest)
    assert manifest["business_fields"]["destination"] == {"destination_id": "DST-77", "destination_version": 3}
    other = payout_manifest(TRANSPORT, body, destination_id="DST-77", destination_version=4)
    assert effect_digest(other) != effect_digest(manifest)


def test_the_approval_set_orders_acknowledgments_and_counts_only_other_approvers() -> None:
    decision = {"decision_id": "d-2", "actor_id": "approver-7", "approval_limit_minor": 100}
    acks = [{"acknowledgment_id": 9, "reason_code": "r", "destination_version": 2, "acknowledged_by": "c"},
            {"acknowledgment_id": 3, "reason_code": "r", "destination_version": 2, "acknowledged_by": "c"}]
    document = approval_set_document(decision, "clerk-22", acks)
    assert [a["acknowledgment_id"] for a in document["acknowledgments"]] == [3, 9]
    assert document["approvals"][0]["approver_id"] == "approver-7"
    assert approval_set_document({**decision, "actor_id": "clerk-22"}, "clerk-22", [])["approvals"] == []
