"""Seed 000, matrix row "Valid payout, provider completes": Allowed, valid, claim won, 1 provider
call, Succeeded, Paid; the decision transaction writes decision, grant, reservation, Approved and
the job in one commit (section 5, "One persistence sequence")."""

from __future__ import annotations

from tests.integration.payouts.conftest import AMOUNT, World


async def test_a_valid_payout_is_decided_claimed_sent_and_reconciled_to_paid(world: World) -> None:
    created = await world.create()
    assert (created["state"], created["version"]) == ("Draft", 1)
    decision = await world.submit()
    assert (decision["outcome"], decision["reason"], decision["policy_version"]) == \
        ("Allowed", "payout.allowed", "payout-policy/2026.10")
    assert decision["grant"]["attempt_number"] == 1
    assert await world.totals() == (0, AMOUNT)
    job = await world.job(decision["grant"]["grant_id"])
    world.clock.advance(6 * 3600 - 300)
    assert await world.run(job) == "Started"  # CardCo accepted: processing
    assert len(world.submits()) == 1
    sent = world.sent_bodies()[0]
    assert sent["client_reference"] == "PAY-3107-a1"
    assert world.submits()[0]["headers"]["idempotency-key"] == "payout-PAY-3107-a1"
    world.clock.advance(60)
    assert await world.reconcile() == 1
    payout = await world.payout()
    assert payout["state"] == "Paid"
    assert [a["state"] for a in payout["attempts"]] == ["Succeeded"]
    assert [d["outcome"] for d in payout["decisions"]] == ["Allowed"]
    assert [g["state"] for g in payout["grants"]] == ["Consumed"]
    assert await world.totals() == (AMOUNT, 0)
    assert len(world.submits()) == 1

