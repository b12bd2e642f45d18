"""Recall webhooks (``payout.recall_processing``, ``payout.recalled``, ``payout.recall_failed``)
applied through the notification handler's payout hook (docs/decisions/0015; seed 000 section 17:
"A recall that fails or becomes Unknown is reconciled the same way" and, section 13, a verified
notification may resolve the attempt "through the same narrow evidence write")."""

from __future__ import annotations

from typing import Any

from tests.integration.notifications.conftest import cardco  # noqa: F401 - CardCo whose webhooks reach the gateway
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import (
    original,
    paid,
    recall_calls,
    recall_job,
    recall_lookups,
    reconcile_recalls,
    run_recall,
)


async def test_a_lost_recall_response_is_resolved_by_the_recalled_notification(world: World) -> None:
    await paid(world)
    await world.cardco.deliver_pending()  # the payout's own notifications, before any recall
    before = await world.payout()
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Unknown"
    world.clock.advance(5)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert attempt["state"] == "Succeeded"
    assert (len(recall_calls(world)), len(recall_lookups(world))) == (1, 0)
    assert original(payout) == original(before)
    escalations = await world.rows("SELECT reason FROM payment_escalations WHERE resolved_at IS NULL")
    assert escalations == []


async def test_a_recall_failed_notification_fails_the_started_recall_attempt(world: World) -> None:
    """Seed 000 classification over the recall table: ``failed`` is a documented no-effect, final,
    with CardCo's code; the payout's own records stay as they are (section 17)."""
    await paid(world)
    await world.cardco.deliver_pending()
    before = await world.payout()
    await world.faults({"operation": "create_recall", "action": "processing", "final_status": "failed",
                        "code": "recall_rejected"})
    assert await run_recall(world, await recall_job(world, (await _decided(world))["grant"]["grant_id"])) == "Started"
    world.clock.advance(5)
    await world.cardco.deliver_pending()
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert (attempt["state"], attempt["outcome_reason"]) == ("Failed", "recall_rejected")
    assert (len(recall_calls(world)), len(recall_lookups(world))) == (1, 0)
    assert original(payout) == original(before)
    observed = [e["detail"] for e in await world.history() if e["kind"] == "recall"
                and e["detail"]["event"] == "provider_observation" and e["detail"].get("source") == "notification"]
    assert [o["type"] for o in observed] == ["payout.recall_processing", "payout.recall_failed"]


async def test_recall_processing_moves_an_unknown_recall_back_to_started_for_the_reconciler(world: World) -> None:
    """Brief rule "Unknown -> Started on processing", applied to the recall attempt: accepted, not
    completed; the reconciler keeps checking it and resolves it by ``<payout_id>-r<N>``."""
    await paid(world)
    await world.cardco.deliver_pending()
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    assert await run_recall(world, await recall_job(world, (await _decided(world))["grant"]["grant_id"])) == "Unknown"
    await world.cardco.deliver_pending()  # only payout.recall_processing is due
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert attempt["state"] == "Started"
    assert attempt["provider_recall_id"].startswith("prc_")
    world.clock.advance(60)
    assert await reconcile_recalls(world) == 1
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert (attempt["state"], attempt["outcome_reason"]) == ("Succeeded", "provider.recalled")
    assert (len(recall_calls(world)), len(recall_lookups(world))) == (1, 1)


async def test_a_recall_notification_whose_amount_differs_is_escalated_and_changes_nothing(world: World) -> None:
    """Section 13: verify amount before trusting a record; seed 004 "Escalations": one key per
    notification, ``payout-recall-attempt:<id>:mismatch:<notification key>``."""
    await paid(world)
    await world.cardco.deliver_pending()
    await world.faults({"operation": "create_recall", "action": "drop_response"},
                       {"operation": "webhook", "action": "tamper_amount", "times": 0})
    assert await run_recall(world, await recall_job(world, (await _decided(world))["grant"]["grant_id"])) == "Unknown"
    world.clock.advance(5)
    await world.cardco.deliver_pending()
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert attempt["state"] == "Unknown"
    episodes = await world.rows("SELECT escalation_key, reason FROM payment_escalations WHERE resolved_at IS NULL")
    assert episodes and {e["reason"] for e in episodes} == {"payout-recall-mismatch"}
    assert all(e["escalation_key"].startswith(f"payout-recall-attempt:{attempt['attempt_id']}:mismatch:")
               for e in episodes)


async def _decided(world: World) -> dict[str, Any]:
    response = await world.post("/v1/payouts/PAY-3107/recall")
    assert response.status_code == 200, response.text
    decision: dict[str, Any] = response.json()
    return decision
