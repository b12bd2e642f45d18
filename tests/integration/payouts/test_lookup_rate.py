"""The payout reconciler's lookups at the rate the account's limits allow, for every reconciler
together (seed 004: lookups run "at a rate the provider's limits allow";
docs/decisions/0042), and a 429 that pauses the account (docs/decisions/0008)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from gateway.payouts.attempts import PAYOUT
from gateway.pipeline.reconciler import Reconciler
from gateway.settings import Settings
from gateway.store.db import Database
from tests.conftest import TEST_ACCOUNT
from tests.integration.payouts.conftest import World
from tests.integration.rate_support import over_the_limit, reads_by_moment

RATE, BURST = 2.0, 3


def limited(settings: Settings) -> Settings:
    """``settings`` with a lookup rate and burst for every account (the top-level setting)."""
    return settings.model_copy(update={"lookup_rate_per_s": RATE, "lookup_burst": BURST})


async def unknown_payouts(world: World, count: int) -> list[str]:
    """``count`` payouts whose attempt is Unknown: CardCo made the payout, its answer was lost."""
    grants = []
    for n in range(count):
        await world.create(f"PAY-{n}", amount_minor=10_000 + n)
        decision = await world.submit(f"PAY-{n}")
        assert decision["outcome"] == "Allowed", decision
        grants.append(decision["grant"])
    world.clock.set(world.clock.now().fromisoformat(grants[-1]["not_before"].replace("Z", "+00:00")))
    await world.faults({"operation": "create_payout", "action": "drop_response", "times": 0})
    for grant in grants:
        assert await world.run(await world.job(grant["grant_id"])) == "Unknown"
    await world.faults()
    world.cardco.store.requests.clear()
    return [f"PAY-{n}" for n in range(count)]


@pytest.fixture
async def pools(world: World) -> AsyncIterator[list[Database]]:
    """Three connection pools of their own, one per reconciler."""
    opened = [await Database.open(world.settings.database_url, size=2, name=f"reconciler-{n}") for n in range(3)]
    yield opened
    for db in opened:
        await db.close()


async def checks(world: World) -> dict[str, int]:
    return {row["payout_id"]: row["checks"] for row in await world.rows("SELECT payout_id, checks FROM payout_attempts")}


async def test_three_reconcilers_never_look_up_faster_than_rate_times_elapsed_plus_burst(
        world: World, pools: list[Database]) -> None:
    """Three reconcilers run rounds at once, half a simulated second apart, over a
    backlog of one account. Its lookups never exceed rate x elapsed + burst over any window; every
    payout is still reconciled, each with exactly one counted check: a check left without a token
    stays due and uncounted, never "not found" or failed."""
    payouts = await unknown_payouts(world, 10)
    settings = limited(world.settings)
    reconcilers = [Reconciler(PAYOUT, db, world.clock, settings, world.services.http) for db in pools]
    world.clock.advance(60)
    looked_up = []
    for _ in range(30):
        looked_up.append(sum(await asyncio.gather(*(r.run_once() for r in reconcilers))))
        if not await world.rows("SELECT 1 FROM payout_attempts WHERE state <> 'Succeeded'"):
            break
        world.clock.advance(0.5)
    assert over_the_limit(reads_by_moment(world.cardco.store.requests, TEST_ACCOUNT), RATE, BURST) == []
    assert looked_up[0] == BURST and sum(looked_up) == len(payouts)
    assert [(await world.payout(p))["state"] for p in payouts] == ["Paid"] * len(payouts)
    assert await checks(world) == {p: 1 for p in payouts}


async def test_a_429_pauses_the_account_and_the_rounds_other_checks_stay_due_uncounted(world: World) -> None:
    """A 429 still pauses the account (seed 004, "pause the sweep"): the
    reconciler's lookup answered 429 pauses the account for its Retry-After and empties its bucket;
    the other checks it had claimed are made due again with their check uncounted; nothing is
    looked up until the pause has ended and the bucket refilled."""
    payouts = await unknown_payouts(world, 3)
    await world.faults({"operation": "list_payouts", "action": "rate_limit", "retry_after_s": 30})
    world.clock.advance(60)
    assert await world.reconcile() == 1
    assert len(world.lookups()) == 1
    [pause] = await world.rows("SELECT scope, paused_until FROM provider_pauses")
    assert (pause["scope"], pause["paused_until"]) == (TEST_ACCOUNT, world.clock.now() + timedelta(seconds=30))
    counted = await checks(world)
    assert sorted(counted.values()) == [0, 0, 1], "only the rate-limited lookup counts as a check"
    due = await world.rows("SELECT 1 FROM payout_attempts WHERE checks = 0 AND next_check_at <= %(now)s",
                           now=world.clock.now())
    assert len(due) == 2
    world.clock.advance(29)
    assert await world.reconcile() == 0 and len(world.lookups()) == 1, "paused"
    world.clock.advance(1)
    assert await world.reconcile() == 0, "the pause is over and the bucket starts empty"
    world.clock.advance(5)
    assert await world.reconcile() == 2
    world.clock.advance(60)
    assert await world.reconcile() == 1
    assert [(await world.payout(p))["state"] for p in payouts] == ["Paid"] * 3
    assert len(world.lookups()) == 4
