"""The grants sweep (docs/decisions/0022 and 0023): PostgreSQL, not the broker,
says which grants are due. A due grant's job is published again, paced, never for a refused or
claimed grant; a grant whose window closes unused is expired, escalated once while its payout
still waits, counted in ``/metrics`` (seed 000 section 21, "Grants issued but never consumed")
and its episode is closed by the payout's next decision."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import dramatiq

from gateway.payouts.grant_sweep import expire_unused
from gateway.redelivery.republish import republish_due
from tests.integration.broker_support import flushall, queued
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import paid, recall_calls, recall_job, run_recall

PACE_S = 2.5


async def _republish(world: World) -> dict[str, int]:
    from jobs.outbox import PUBLISHERS
    from jobs.redelivery import SOURCES

    return await republish_due(world.services.db, world.clock, SOURCES, PUBLISHERS, pace_s=PACE_S)


async def _episodes(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason, details, resolved_at, resolution_note"
                            " FROM payment_escalations ORDER BY escalation_id")


async def _metric(world: World, name: str, operation: str) -> float:
    text = (await world.http.get("/metrics")).text
    [line] = [line for line in text.splitlines() if line.startswith(f'{name}{{operation="{operation}"}}')]
    return float(line.rsplit(" ", 1)[1])


async def test_a_due_grant_is_published_once_per_pace_by_racing_sweeps_and_never_once_refused(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """A clock-driven sweep finds issued grants that are due (not_before passed),
    unconsumed, unexpired and not claimed, and publishes their job again. Two sweepers racing
    (two clocks, a backlog of wake-ups) publish once; a refused grant stays refused (seed 000
    section 9: "A refused grant stays refused, and the payout waits for a fresh decision")."""
    await world.create()
    grant = (await world.submit())["grant"]
    job = await world.job(grant["grant_id"])
    world.clock.set(datetime.fromisoformat(grant["not_before"].replace("Z", "+00:00")) - timedelta(seconds=1))
    assert (await _republish(world))["payout-job"] == 0, "not due before not_before"
    world.clock.advance(1)
    racing = await asyncio.gather(_republish(world), _republish(world))
    assert sum(r["payout-job"] for r in racing) == 1
    assert (await _republish(world))["payout-job"] == 0, "paced"
    world.clock.advance(PACE_S)
    assert (await _republish(world))["payout-job"] == 1
    assert queued(jobs_runtime) == 2

    await world.tenant(payouts_suspended=True)  # the delivery is refused: final for this grant
    assert await world.run(job) == "policy.no-longer-allows"
    world.clock.advance(PACE_S)
    assert (await _republish(world))["payout-job"] == 0
    [grant] = (await world.payout())["grants"]
    assert grant["state"] == "Issued" and world.submits() == []


async def test_a_grant_whose_job_was_lost_expires_escalated_once_counted_and_closed_by_the_next_decision(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """A grant that expires unconsumed raises an escalation and counts in /metrics
    (seed 000 'grants issued but never consumed'); seed 000 section 6: "A payout that misses it
    does not run late on old authority; it waits for a fresh decision. Its daily-limit reservation
    is released when the unused grant is atomically moved to Expired"."""
    job = await world.approved()
    assert await _metric(world, "paygate_payout_grants_due_unclaimed", "payout.submit") == 1
    assert (await _republish(world))["payout-job"] == 1
    flushall(jobs_runtime)  # the job is lost, and so is the sweep's copy
    world.clock.advance(world.settings.payout_grant_window_s)

    assert await expire_unused(world.services.db, world.clock, world.settings) == 1
    assert await expire_unused(world.services.db, world.clock, world.settings) == 0
    [episode] = await _episodes(world)
    assert episode["escalation_key"] == f"payout-grant:{job.grant_id}:expired-unused"
    assert episode["reason"] == "grant-expired-unused" and episode["resolved_at"] is None
    assert episode["details"] | {"not_before": None, "expires_at": None} == {
        "operation": "payout.submit", "payout_id": "PAY-3107", "grant_id": job.grant_id, "payout_state": "Approved",
        "republications": 1, "not_before": None, "expires_at": None}
    assert [g["state"] for g in (await world.payout())["grants"]] == ["Expired"]
    assert await world.totals() == (0, 0)
    assert await _metric(world, "paygate_payout_grants_expired_unused", "payout.submit") == 1
    assert await _metric(world, "paygate_payout_grants_due_unclaimed", "payout.submit") == 0
    alerts = await world.rows("SELECT dedup_key FROM outbox_messages WHERE kind = 'operator-alert'")
    assert len(alerts) == 1

    decision = await world.submit()  # the fresh decision the payout was waiting for, whatever it says
    [episode] = await _episodes(world)
    assert episode["resolved_at"] is not None
    assert episode["resolution_note"] == f"answered by decision {decision['decision_id']} ({decision['outcome']})"


async def test_a_refused_grant_that_expires_says_why_and_a_cancelled_payouts_grant_raises_nothing(
        world: World) -> None:
    """The escalation is "closed/explained appropriately": it carries the last
    refused delivery; a payout no longer waiting (cancelled, seed 000 Trace C) is not escalated,
    and cancelling a payout closes its expired grants' episodes."""
    job = await world.approved()
    await world.tenant(payouts_suspended=True)
    assert await world.run(job) == "policy.no-longer-allows"
    world.clock.advance(world.settings.payout_grant_window_s)
    await expire_unused(world.services.db, world.clock, world.settings)
    [episode] = await _episodes(world)
    assert (episode["details"]["last_refusal"], episode["details"]["republications"]) == (
        "policy.no-longer-allows", 0)

    assert (await world.post("/v1/payouts/PAY-3107/cancel")).status_code == 200
    [episode] = await _episodes(world)
    assert episode["resolution_note"] == "payout cancelled"

    await world.tenant(payouts_suspended=False)
    other = await world.approved("PAY-3108")
    assert (await world.post("/v1/payouts/PAY-3108/cancel")).status_code == 200
    assert await world.run(other) == "payout.not-executable"
    world.clock.advance(world.settings.payout_grant_window_s)
    assert await expire_unused(world.services.db, world.clock, world.settings) == 1
    assert len(await _episodes(world)) == 1, "a cancelled payout waits for nothing"


async def test_a_recall_grant_that_nobody_claims_expires_escalated_and_the_sweep_runs_it_while_due(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """For payouts AND recalls: a recall grant is due at once; the sweep
    publishes its job while the payout is Paid and the window open; unused, it expires (nothing
    expired recall grants before), is escalated once and counted; a new recall decision closes it."""
    await paid(world)
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    grant_id = decision["grant"]["grant_id"]
    assert (await _republish(world))["payout-recall-job"] == 1
    flushall(jobs_runtime)
    world.clock.advance(world.settings.payout_grant_window_s)
    assert await expire_unused(world.services.db, world.clock, world.settings) == 1
    [episode] = [e for e in await _episodes(world) if e["reason"] == "grant-expired-unused"]
    assert episode["escalation_key"] == f"payout-recall-grant:{grant_id}:expired-unused"
    assert (episode["details"]["operation"], episode["details"]["republications"]) == ("payout.recall", 1)
    assert (await world.payout())["recalls"]["grants"][0]["state"] == "Expired"
    assert await _metric(world, "paygate_payout_grants_expired_unused", "payout.recall") == 1

    again = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert again["outcome"] == "Allowed"
    [episode] = [e for e in await _episodes(world) if e["reason"] == "grant-expired-unused"]
    assert episode["resolution_note"].startswith("answered by recall decision")
    assert recall_calls(world) == []
    assert await run_recall(world, await recall_job(world, again["grant"]["grant_id"])) in ("Succeeded", "Started")
    assert len(recall_calls(world)) == 1
