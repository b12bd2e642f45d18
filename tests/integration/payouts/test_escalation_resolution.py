"""Seed 004, "Escalations", applied to payouts: "Every writer that resolves an attempt resolves that
attempt's open escalations in the same transaction, so a deadline ... escalation stops reminding
once the payment is settled." Payout episodes are keyed ``payout-attempt:<id>:<problem>``."""

from __future__ import annotations

from typing import Any

from tests.integration.payouts.conftest import World

ESCALATION_WINDOW_S = 900


async def _episodes(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason, resolved_at, next_reminder_at, resolution_note "
                            "FROM payment_escalations ORDER BY escalation_id")


async def _unresolved_deadline(world: World) -> str:
    """A payout whose lookups fail past its escalation deadline (matrix: "Reconciliation cannot
    tell -> Unknown, escalated"); the attempt's id."""
    await world.faults({"operation": "create_payout", "action": "drop_response"},
                       {"operation": "list_payouts", "action": "error_500_before_effect", "times": 0})
    await world.run(await world.approved())
    for _ in range(5):
        world.clock.advance(ESCALATION_WINDOW_S)
        await world.reconcile()
    [episode] = await _episodes(world)
    attempt_id: str = (await world.payout())["attempts"][0]["attempt_id"]
    assert (episode["reason"], episode["resolved_at"]) == ("payout-deadline", None)
    assert episode["escalation_key"] == f"payout-attempt:{attempt_id}:deadline"
    return attempt_id


async def test_the_reconciler_that_resolves_an_attempt_closes_its_open_escalations(world: World) -> None:
    """Seed 004 "Escalations": the resolving transaction closes the episode and stops its reminders."""
    attempt_id = await _unresolved_deadline(world)
    await world.faults()  # lookups answer again
    world.clock.advance(ESCALATION_WINDOW_S)
    await world.reconcile()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    [episode] = await _episodes(world)
    assert episode["resolved_at"] is not None and episode["next_reminder_at"] is None
    assert "Succeeded" in episode["resolution_note"] and "payout-reconciler" in episode["resolution_note"]
    assert attempt_id in episode["escalation_key"]


async def test_an_escalation_of_another_attempt_stays_open(world: World) -> None:
    """Resolution is per attempt: the prefix names one attempt id, never its neighbours."""
    await _unresolved_deadline(world)
    other = "payout-attempt:00000000-0000-0000-0000-000000000000:deadline"
    await world.services.db.fetch_one(
        "INSERT INTO payment_escalations (escalation_key, reason, raised_at, next_reminder_at) "
        "VALUES (%(k)s, 'payout-deadline', %(now)s, %(now)s) RETURNING escalation_id",
        {"k": other, "now": world.clock.now()})
    await world.faults()
    world.clock.advance(ESCALATION_WINDOW_S)
    await world.reconcile()
    still_open = [e["escalation_key"] for e in await _episodes(world) if e["resolved_at"] is None]
    assert still_open == [other]
