"""Recovery lookups at the rate the account's limits allow, for every worker together (seed 004: "every
minute, at a rate the provider's limits allow"; docs/decisions/0042).
Several recovery workers, each with its own connection pool, sweep at once over one ManualClock
against the in-process CardCo, whose request log says when each lookup arrived."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.payments.attempts import Attempts
from gateway.payments.client import PaymentClient
from gateway.ratelimits.buckets import LookupTokens
from gateway.recovery.loop import DEFERRED, Recovery
from gateway.settings import Settings
from gateway.store.db import Database
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop
from tests.integration.rate_support import over_the_limit, reads_by_moment

RATE, BURST = 2.0, 3  # the test account's own limit; the live account keeps the defaults (20/s, 100)


def limited(settings: Settings, rate: float = RATE, burst: int = BURST) -> Settings:
    """``settings`` with the test account's own lookup rate and burst (a per-account override)."""
    accounts = [a.model_copy(update={"lookup_rate_per_s": rate, "lookup_burst": burst}) if a.id == TEST_ACCOUNT
                else a for a in settings.provider_accounts]
    return settings.model_copy(update={"provider_accounts": accounts})


async def unknown_payments(shop: Shop, prefix: str, count: int, account: str = TEST_ACCOUNT) -> list[dict[str, Any]]:
    """``count`` orders whose first send's answer was lost after CardCo took the payment."""
    await shop.faults({"operation": "create_payment", "action": "drop_response", "times": 0})
    for n in range(count):
        await shop.order(f"{prefix}{n}", account=account)
        assert (await shop.pay(f"{prefix}{n}")).json()["state"] == "Unknown"
    await shop.faults()
    return [attempt for n in range(count) for attempt in await shop.attempts(f"{prefix}{n}")]


@pytest.fixture
async def pools(shop: Shop) -> AsyncIterator[Callable[[int], Any]]:
    """Connection pools of their own, one per worker, closed after the test."""
    opened: list[Database] = []

    async def open_pools(count: int) -> list[Database]:
        for n in range(count):
            opened.append(await Database.open(shop.services.settings.database_url, size=3, name=f"recovery-{n}"))
        return opened[-count:]

    yield open_pools
    for db in opened:
        await db.close()


def workers(shop: Shop, settings: Settings, dbs: list[Database], concurrency: int = 2) -> list[Recovery]:
    clock = shop.services.clock
    return [Recovery(settings, clock, db, Attempts(db, clock, settings), PaymentClient(settings, clock, shop.services.http),
                     owner=f"recovery-{n}", concurrency=concurrency) for n, db in enumerate(dbs)]


async def test_four_workers_never_look_up_faster_than_rate_times_elapsed_plus_burst_and_other_accounts_go_on(
        shop: Shop, clock: ManualClock, pools: Callable[[int], Any]) -> None:
    """Four workers, two passes each at once, sweep a backlog of one account in
    rounds half a simulated second apart. Its lookups never exceed rate x elapsed + burst over any
    window, every attempt is still found (a deferred pass is not "not found": one lookup each,
    recorded once), and the live account, with its own bucket, is done in the first round."""
    backlog = await unknown_payments(shop, "ORD-T", 12)
    live = await unknown_payments(shop, "ORD-L", 3, account=LIVE_ACCOUNT)
    shop.cardco.store.requests.clear()
    fleet = workers(shop, limited(shop.services.settings), await pools(4))
    clock.advance(60)
    outcomes: list[dict[str, int]] = []
    for _ in range(30):
        reports = await asyncio.gather(*(worker.sweep() for worker in fleet))
        outcomes.append({k: v for report in reports for k, v in (report.outcomes or {}).items()})
        if not await shop.services.db.fetch_one(
                "SELECT 1 FROM payment_attempts WHERE state <> 'Succeeded' LIMIT 1"):
            break
        clock.advance(0.5)
    assert over_the_limit(reads_by_moment(shop.cardco.store.requests, TEST_ACCOUNT), RATE, BURST) == []
    assert sum(reads_by_moment(shop.cardco.store.requests, TEST_ACCOUNT).values()) == len(backlog)
    assert any(DEFERRED in round_outcomes for round_outcomes in outcomes), "the limit did hold passes back"
    for attempt in backlog + live:
        assert (await shop.services.attempts.get(attempt["attempt_id"]))["state"] == "Succeeded"
        assert (await shop.events(attempt["attempt_id"])).count("lookup") == 1
    assert len(reads_by_moment(shop.cardco.store.requests, LIVE_ACCOUNT)) == 1, "the live account in one round"


async def test_a_pass_without_tokens_is_deferred_with_its_lease_released_and_its_schedule_unchanged(
        shop: Shop, clock: ManualClock) -> None:
    """Lookups left without tokens wait for a later sweep, never treated as "not
    found" or failed and never holding a lease (decision 0025: a pass never waits inside its lease).
    A pass takes the two reads it may make (by reference, the payment-method check) and gives back
    what it did not spend: the bucket (burst 3) admits two passes, the third claimed attempt is
    released as it was, and the sweep claims nothing more of the account."""
    attempts = await unknown_payments(shop, "ORD-T", 4)
    before = {a["attempt_id"]: a for a in attempts}
    settings = limited(shop.services.settings, rate=0.5)
    recovery = workers(shop, settings, [shop.services.db], concurrency=1)[0]
    clock.advance(60)
    report = await recovery.sweep()
    assert (report.claimed, report.outcomes) == (3, {"found:succeeded->Succeeded": 2, DEFERRED: 1})
    waiting = [await shop.services.attempts.get(a["attempt_id"]) for a in attempts]
    waiting = [row for row in waiting if row["state"] != "Succeeded"]
    assert len(waiting) == 2, "one deferred, one never claimed"
    for row in waiting:
        assert row["state"] == "Unknown"
        assert (row["recovery_owner"], row["lease_token"], row["lease_expires_at"]) == (None, None, None)
        assert row["next_check_at"] == before[row["attempt_id"]]["next_check_at"] <= clock.now(), "still due"
        assert "lookup" not in await shop.events(row["attempt_id"])
    [account] = [a for a in settings.provider_accounts if a.id == TEST_ACCOUNT]
    assert await LookupTokens(shop.services.db, clock, settings).take(account, 3) == 1, "another worker's take"
    assert await recovery.run_pass(waiting[0]["attempt_id"]) == DEFERRED, "a lone pass finds no token either"
    assert (await shop.services.attempts.get(waiting[0]["attempt_id"]))["recovery_owner"] is None
    clock.advance(4)  # two tokens
    assert (await recovery.sweep()).outcomes == {"found:succeeded->Succeeded": 1, DEFERRED: 1}
    clock.advance(4)
    assert (await recovery.sweep()).outcomes == {"found:succeeded->Succeeded": 1}


class CountedTokens(LookupTokens):
    """The shared buckets, with the statements a sweep sends to them counted (wanted per take)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.takes: list[int] = []
        self.returns: list[int] = []

    async def take(self, account: Any, wanted: int) -> int:
        self.takes.append(wanted)
        return await super().take(account, wanted)

    async def give_back(self, account: Any, count: int) -> None:
        self.returns.append(count)
        await super().give_back(account, count)


async def test_a_sweep_takes_only_each_claims_shortfall_and_gives_back_once_at_its_end(
        shop: Shop, clock: ManualClock) -> None:
    """The recovery pass's round trips (docs/decisions/0050, 0042): tokens a claim's
    passes did not spend stay with the sweep for its next claim, so each claim takes only its
    shortfall, still in one statement, and the rest goes back once when the sweep ends. Four passes
    one at a time, each reserving two reads and spending one (found by reference): takes of 2, 1, 1,
    1 and one return of 1; the bucket ends where the four lookups leave it."""
    attempts = await unknown_payments(shop, "ORD-T", 4)
    settings = limited(shop.services.settings, rate=0.5, burst=10)
    recovery = workers(shop, settings, [shop.services.db], concurrency=1)[0]
    counted = recovery._tokens = CountedTokens(shop.services.db, clock, settings)
    clock.advance(60)
    report = await recovery.sweep()
    assert report.outcomes == {"found:succeeded->Succeeded": 4}
    assert (counted.takes, counted.returns) == ([2, 1, 1, 1], [1])
    [account] = [a for a in settings.provider_accounts if a.id == TEST_ACCOUNT]
    assert await counted.take(account, 10) == 10 - len(attempts), "every unspent token went back"
