"""Seed 001 over real payouts (seed 000's world, real PostgreSQL, CardCo in-process): the effect
record committed by the claim with its governance digests, the protocol in ``GET /v1/payouts``,
the send gate, and the certificate of a paid payout."""

from __future__ import annotations

from gateway.domain.certificates import verify
from gateway.effects.certify import Certifier
from gateway.effects.gate import SendGate
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.config import payout_account
from gateway.pipeline.effects import intent, open_send
from gateway.providers.base import Request
from tests.integration.payouts.conftest import TOKEN, World


async def test_a_paid_payout_shows_its_effect_and_a_certificate_that_verifies(world: World) -> None:
    job = await world.approved()
    assert await world.run(job) == "Started"
    attempt = (await world.rows("SELECT * FROM payout_attempts"))[0]
    record = (await world.rows("SELECT * FROM effect_records"))[0]
    derived = intent(PAYOUT, attempt, payout_account(world.settings), TOKEN)
    assert bytes(record["effect_digest"]) == derived.digest
    assert len(bytes(record["policy_digest"])) == len(bytes(record["approval_set_digest"])) == 32
    assert TOKEN not in str(record["manifest"])
    assert (await world.payout())["effect"]["protocol_state"] == "EXECUTING"
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout()
    assert payout["effect"] == payout["attempts"][0]["effect"] == {
        "effect_digest": derived.digest.hex(), "idempotency_key": "payout-PAY-3107-a1", "protocol_state": "CERTIFIED"}
    ledger = await world.rows("SELECT to_state FROM effect_ledger ORDER BY sequence")
    assert [row["to_state"] for row in ledger] == [
        "PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "EXECUTING",
        "EFFECT_CONFIRMED", "CERTIFIED"]
    for who in ("clerk", "operator", "admin"):
        response = await world.http.get("/v1/payouts/PAY-3107/certificate", headers=world.tokens[who])
        assert response.status_code == 200, response.text
    document = response.json()
    assert verify(document, Certifier.of(world.settings).public_keys())
    assert (document["certificate"]["payout_id"], document["certificate"]["provider_reference"]) == \
        ("PAY-3107", payout["attempts"][0]["provider_payout_id"])
    hidden = await world.http.get("/v1/payouts/PAY-3107/certificate", headers=world.tokens["other_tenant"])
    assert (hidden.status_code, hidden.json()["code"]) == (404, "payout.not_found")


async def test_a_payout_needing_acknowledgment_records_pending_approval(world: World) -> None:
    await world.destination(token="dst_tok_changed")  # recently changed: acknowledgment required
    await world.create()
    assert (await world.submit())["outcome"] == "AcknowledgmentRequired"
    response = await world.post("/v1/payouts/PAY-3107/acknowledge", {"reason_code": "destination.recently-changed"})
    decision = response.json()
    assert decision["outcome"] == "Allowed", decision
    world.clock.set(world.clock.now().fromisoformat(decision["grant"]["not_before"].replace("Z", "+00:00")))
    await world.run(await world.job(decision["grant"]["grant_id"]))
    states = [row["to_state"] for row in await world.rows("SELECT to_state FROM effect_ledger ORDER BY sequence")]
    assert states[:5] == ["PROPOSED", "POLICY_EVALUATED", "PENDING_APPROVAL", "APPROVED", "INTENT_PERSISTED"]


async def test_a_payout_send_with_a_drifted_attempt_is_refused_and_escalated(world: World) -> None:
    """Every payout send re-derives the digest from the body it would carry: a drifted amount, or a
    token that is not the attempt's destination's, sends nothing."""
    job = await world.approved()
    await world.run(job)
    attempt = (await world.rows("SELECT * FROM payout_attempts"))[0]
    sent = len(world.submits())
    gate = SendGate(world.services.db, world.clock, world.settings.reminder_interval_s)
    account, pepper = payout_account(world.settings), world.settings.token_pepper.get_secret_value()
    assert await open_send(PAYOUT, gate, {**attempt, "amount_minor": attempt["amount_minor"] + 1}, account, TOKEN,
                           pepper=pepper, actor="test") == "effect-digest-mismatch"
    assert await open_send(PAYOUT, gate, attempt, account, "dst_tok_other", pepper=pepper, actor="test") == \
        "effect-digest-mismatch"
    assert len(world.submits()) == sent
    keys = [row["escalation_key"] for row in await world.rows("SELECT escalation_key FROM payment_escalations")]
    assert keys == [f"payout-attempt:{attempt['attempt_id']}:effect-digest-mismatch"]
    opened = await open_send(PAYOUT, gate, attempt, account, TOKEN, pepper=pepper, actor="test")
    assert isinstance(opened, Request)  # the gate opens: the request whose digest it proved, to be sent as it is
