"""Seed 001 over payout recalls (docs/decisions/0015): the recall attempt's own effect
record committed by the recall claim (operation ``payout.recall``, the recalled provider payout id,
never a destination token), the protocol shown per recall attempt in ``GET /v1/payouts/{id}``, the
send gate before every recall send, and the certificate of a confirmed recall. The payout's own
effect record is never touched."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.certificates import verify
from gateway.effects.certify import Certifier, certificate_of
from gateway.effects.gate import SendGate
from gateway.payouts.config import payout_account
from gateway.payouts.recalls import RECALL
from gateway.pipeline.effects import intent, open_send
from gateway.providers.base import Request
from gateway.providers.cardco import adapter as cardco
from tests.integration.payouts.conftest import TOKEN, World
from tests.integration.payouts.recall_helpers import (
    original,
    paid,
    recall_calls,
    recall_job,
    reconcile_recalls,
    run_recall,
)


async def _records(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT * FROM effect_records ORDER BY created_at, attempt_kind")


async def _ledger(world: World, attempt_id: Any) -> list[str]:
    rows = await world.rows("SELECT to_state FROM effect_ledger WHERE attempt_id = %(a)s ORDER BY sequence",
                            a=attempt_id)
    return [row["to_state"] for row in rows]


async def _recall_started(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    """A paid payout and its first recall sent (CardCo answers processing)."""
    before = await paid(world)
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Started"
    return before, (await world.rows("SELECT * FROM payout_recall_attempts"))[0]


async def test_a_confirmed_recall_ends_certified_with_a_certificate_that_verifies(world: World) -> None:
    before, attempt = await _recall_started(world)
    payout_record, = [r for r in await _records(world) if r["attempt_kind"] == "payout"]
    record, = [r for r in await _records(world) if r["attempt_kind"] == "payout_recall"]
    assert record["attempt_id"] == attempt["attempt_id"]
    derived = intent(RECALL, attempt, payout_account(world.settings), None)
    assert bytes(record["effect_digest"]) == derived.digest
    manifest = record["manifest"]
    assert (manifest["operation"], manifest["idempotency_key"], manifest["client_reference"]) == \
        ("payout.recall", "recall-PAY-3107-r1", "PAY-3107-r1")
    provider_payout_id = before["attempts"][0]["provider_payout_id"]
    assert manifest["business_fields"]["provider_payout_id"] == provider_payout_id
    assert manifest["endpoint"].endswith(f"/v1/payouts/{provider_payout_id}/recalls")
    assert TOKEN not in str(manifest) and "destination_token" not in str(manifest)
    assert len(bytes(record["policy_digest"])) == len(bytes(record["approval_set_digest"])) == 32
    view = (await world.payout())["recalls"]["attempts"][0]
    assert view["effect"] == {"effect_digest": derived.digest.hex(), "idempotency_key": "recall-PAY-3107-r1",
                              "protocol_state": "EXECUTING"}
    assert manifest["business_fields"]["expires_at"] == view["send_deadline"]  # expires_at as the payout's
    world.clock.advance(60)
    assert await reconcile_recalls(world) == 1
    payout = await world.payout()
    [recalled] = payout["recalls"]["attempts"]
    assert recalled["state"] == "Succeeded"
    assert recalled["effect"]["protocol_state"] == "CERTIFIED"
    assert await _ledger(world, attempt["attempt_id"]) == [
        "PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "EXECUTING",
        "EFFECT_CONFIRMED", "CERTIFIED"]
    async with world.services.db.transaction() as conn:
        document = await certificate_of(conn, attempt["attempt_id"])
    assert document is not None
    assert verify(document, Certifier.of(world.settings).public_keys())
    certificate = document["certificate"]
    assert (certificate["attempt_kind"], certificate["operation"], certificate["payout_id"],
            certificate["provider_reference"], certificate["idempotency_key"]) == \
        ("payout_recall", "payout.recall", "PAY-3107", recalled["provider_recall_id"], "recall-PAY-3107-r1")
    assert certificate["effect_digest"] == derived.digest.hex()
    assert certificate["evidence_event_ids"]
    tampered = {**document, "certificate": {**certificate, "provider_reference": "prc_other"}}
    assert not verify(tampered, Certifier.of(world.settings).public_keys())
    # The payout's own effect record, ledger and certificate are untouched by the recall.
    assert original(payout) == original(before)
    assert payout["effect"] == before["effect"] and payout["effect"]["protocol_state"] == "CERTIFIED"
    assert [r for r in await _records(world) if r["attempt_kind"] == "payout"] == [payout_record]
    assert await _ledger(world, payout_record["attempt_id"]) == [
        "PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "EXECUTING",
        "EFFECT_CONFIRMED", "CERTIFIED"]
    response = await world.http.get("/v1/payouts/PAY-3107/certificate", headers=world.tokens["clerk"])
    assert response.json()["certificate"]["attempt_kind"] == "payout"  # still the payout's certificate


async def test_a_drifted_recall_send_is_refused_before_cardco_and_escalated(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall executor re-derives the digest before the send: a request that is not the
    committed one (here a different ``expires_at``) never reaches CardCo; the attempt is Unknown
    with the reason, and ``payout-recall-attempt:<id>:effect-digest-mismatch`` is open."""
    before = await paid(world)
    payout_effect = before["effect"]
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    body_of = cardco.recall_body
    calls = []

    def drifting(attempt: dict[str, Any]) -> bytes:
        calls.append(attempt["attempt_id"])
        body = body_of(attempt)
        return body if len(calls) == 1 else body.replace(b'"expires_at":"', b'"expires_at":"1')  # after the claim

    monkeypatch.setattr(cardco, "recall_body", drifting)
    code = await run_recall(world, await recall_job(world, decision["grant"]["grant_id"]))
    assert code == "request.not-buildable.effect-digest-mismatch"
    assert recall_calls(world) == []  # nothing reached CardCo's request log
    [attempt] = await world.rows("SELECT * FROM payout_recall_attempts")
    assert (attempt["state"], attempt["outcome_reason"], attempt["sends"]) == \
        ("Unknown", "request.not-buildable.effect-digest-mismatch", 1)
    escalations = await world.rows("SELECT escalation_key FROM payment_escalations WHERE resolved_at IS NULL")
    assert [row["escalation_key"] for row in escalations] == \
        [f"payout-recall-attempt:{attempt['attempt_id']}:effect-digest-mismatch"]
    assert await _ledger(world, attempt["attempt_id"]) == [
        "PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "OUTCOME_UNKNOWN"]
    payout = await world.payout()
    assert payout["recalls"]["attempts"][0]["effect"]["protocol_state"] == "OUTCOME_UNKNOWN"
    assert payout["effect"] == payout_effect  # the payout's own effect record is untouched
    assert original(payout) == original(before)


async def test_the_recall_gate_refuses_a_different_payout_or_key(world: World) -> None:
    _, attempt = await _recall_started(world)
    sent = len(recall_calls(world))
    gate = SendGate(world.services.db, world.clock, world.settings.reminder_interval_s)
    account = payout_account(world.settings)
    assert await open_send(RECALL, gate, {**attempt, "provider_payout_id": "po_someone_else"}, account, None,
                                  pepper="", actor="test") == "effect-digest-mismatch"
    assert await open_send(RECALL, gate, {**attempt, "idempotency_key": "recall-PAY-3107-r9"}, account, None,
                                  pepper="", actor="test") == "effect-digest-mismatch"
    opened = await open_send(RECALL, gate, attempt, account, None, pepper="", actor="test")
    assert isinstance(opened, Request)  # the gate opens: the request whose digest it proved, to be sent as it is
    assert len(recall_calls(world)) == sent
