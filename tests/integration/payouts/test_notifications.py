"""Verified ``payout.*`` notifications (API.md "Provider notifications") applied by the payouts
aggregate in the notification handler's transaction (docs/decisions/0011): seed 000, "Reconcile
Before Any New Attempt": "If the provider's late response or notification reaches the platform
first, it may resolve ATT-1 through the same narrow evidence write"; section 13, "A return is not a
rejection". CardCo runs in-process and delivers its signed webhooks into the real gateway app."""

from __future__ import annotations

from typing import Any

from tests.integration.notifications.conftest import cardco  # noqa: F401 - CardCo whose webhooks reach the gateway
from tests.integration.payouts.conftest import AMOUNT, World

PROCESSING_S = 2  # CardCo's processing_complete_after_s


async def _observations(world: World) -> list[dict[str, Any]]:
    return [e["detail"] for e in await world.history() if e["kind"] == "provider_observation"
            and e["detail"].get("source") == "notification"]


async def test_a_lost_response_is_resolved_by_the_paid_notification_without_a_lookup(world: World) -> None:
    """Section 13: the notification resolves the Unknown attempt through the same conditional write
    as the reconciler: Succeeded, Paid, the reservation moved to paid; no lookup, one submit."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved()) == "Unknown"
    world.clock.advance(PROCESSING_S)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert payout["attempts"][0]["provider_payout_id"] == world.ledger()[0]["id"]
    assert await world.totals() == (AMOUNT, 0)
    assert (len(world.submits()), len(world.lookups())) == (1, 0)
    assert [o["type"] for o in await _observations(world)] == ["payout.processing", "payout.paid"]
    assert payout["effect"]["protocol_state"] == "CERTIFIED"  # seed 001: certified in the confirming transaction


async def test_processing_moves_unknown_back_to_started_for_the_reconciler(world: World) -> None:
    """Brief rule "Unknown -> Started on processing": accepted, not completed; the payout is
    Executing again and the reconciler keeps checking it."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    await world.run(await world.approved())
    await world.cardco.deliver_pending()  # only payout.processing is due
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Executing", "Started")
    assert await world.totals() == (0, AMOUNT)
    world.clock.advance(PROCESSING_S + 60)
    await world.reconcile()
    assert (await world.payout())["state"] == "Paid"


async def test_a_failed_notification_fails_the_attempt_and_releases_the_reservation(world: World) -> None:
    """Seed 000 classification: ``failed`` is a documented no-effect: Failed, reservation released."""
    await world.faults({"operation": "create_payout", "action": "processing", "final_status": "failed",
                        "code": "destination_closed"})
    assert await world.run(await world.approved()) == "Started"
    world.clock.advance(PROCESSING_S)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Failed", "Failed")
    assert payout["attempts"][0]["outcome_reason"] == "destination_closed"
    assert await world.totals() == (0, 0)


async def test_a_return_after_paid_is_one_separate_event_even_when_redelivered(world: World) -> None:
    """Section 13, "A return is not a rejection": the attempt stays Succeeded, the payout Paid;
    a redelivered ``payout.returned`` adds no second return."""
    assert await world.run(await world.approved()) == "Started"
    world.clock.advance(PROCESSING_S)
    await world.cardco.deliver_pending()
    [provider_payout] = world.cardco.store.payouts.values()
    provider_payout.change("returned", "account_closed")
    world.cardco.announce(provider_payout)
    [delivery] = await world.cardco.deliver_pending()
    world.cardco.webhooks.redeliver(delivery.event.id)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert [r["provider_payout_id"] for r in payout["returns"]] == [provider_payout.id]
    assert await world.totals() == (AMOUNT, 0)


async def test_a_notification_whose_amount_differs_is_escalated_and_changes_nothing(world: World) -> None:
    """Seed 000 section 13: verify amount before trusting a record; seed 004 "Escalations":
    ``attempt:<id>:mismatch:<notification key>`` (here ``payout-attempt:``)."""
    await world.faults({"operation": "create_payout", "action": "drop_response"},
                       {"operation": "webhook", "action": "tamper_amount", "times": 0})
    await world.run(await world.approved())
    world.clock.advance(PROCESSING_S)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Unknown", "Unknown")
    episodes = await world.rows("SELECT escalation_key, reason FROM payment_escalations WHERE resolved_at IS NULL")
    attempt_id = payout["attempts"][0]["attempt_id"]
    assert {e["reason"] for e in episodes} == {"payout-mismatch"}
    assert all(e["escalation_key"].startswith(f"payout-attempt:{attempt_id}:mismatch:evt_") for e in episodes)
    assert await world.totals() == (0, AMOUNT)
