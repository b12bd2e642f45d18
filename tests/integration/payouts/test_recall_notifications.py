"""Recall webhooks (``payout.recall_processing``, ``payout.recalled``, ``payout.recall_failed``)
applied through the notification handler's payout hook (docs/decisions/0015; seed 000 section 17:
"A recall that fails or becomes Unknown is reconciled the same way" and, section 13, a verified
notification may resolve the attempt "through the same narrow evidence write")."""

from __future__ import annotations

from tests.integration.notifications.conftest import cardco  # noqa: F401 - CardCo whose webhooks reach the gateway
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import (
    original,
    paid,
    recall_calls,
    recall_job,
    recall_lookups,
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
