"""The lookup token bucket in PostgreSQL (a per-provider-account rate "enforced
across every worker process"; seed 004: lookups run "at a rate the provider's limits allow";
docs/decisions/0042). Real processes race on the real bucket row; the injected clock's now is a
parameter of every take."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier
from typing import Any

from gateway.clock import ManualClock
from gateway.ratelimits.buckets import LookupTokens
from gateway.settings import Settings, build_settings
from gateway.store.db import Database
from tests.integration.rate_support import over_the_limit

START = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
STEP_S = 0.1
STEPS = 40
WORKERS = 4
# Two accounts, each with its own rate and burst: the buckets must not share anything.
LIMITS = {"cardco:acct_store:test": (10.0, 5), "cardco:acct_other:test": (4.0, 3)}


def _settings(database_url: str, limits: dict[str, tuple[float, int]]) -> Settings:
    return build_settings({
        "database_url": database_url, "redis_url": "redis://127.0.0.1:1/0", "token_pepper": "p",
        "provider_accounts": [{"id": scope, "base_url": "http://cardco.test", "api_key": "k",
                               "webhook_endpoint_id": scope, "lookup_rate_per_s": rate, "lookup_burst": burst}
                              for scope, (rate, burst) in limits.items()]})


def _taker(database_url: str, seed: int, barrier: Barrier, results: Any) -> None:
    """One worker process: at every step of the shared simulated clock (all processes at the same
    moment, behind a barrier), take 1-4 tokens of each account."""
    async def run() -> list[tuple[int, str, int]]:
        settings = _settings(database_url, LIMITS)
        clock = ManualClock(START)
        db = await Database.open(database_url, size=1, name=f"bucket-taker-{seed}")
        tokens = LookupTokens(db, clock, settings)
        rng = random.Random(seed)
        grants = []
        try:
            for step in range(STEPS):
                barrier.wait()
                clock.set(START + timedelta(seconds=step * STEP_S))
                for account in settings.provider_accounts:
                    grants.append((step, account.id, await tokens.take(account, rng.randint(1, 4))))
        finally:
            await db.close()
        return grants

    results.put(asyncio.run(run()))


def test_worker_processes_racing_on_one_bucket_never_get_more_than_rate_times_elapsed_plus_burst(
        database_url: str) -> None:
    """Four processes take tokens of two accounts at the same simulated moments,
    always wanting more than the rate gives. Over every window of simulated time each account's
    grants stay within rate x elapsed + burst, and, since demand never stops, they reach it
    exactly: one statement per take, no token granted twice and none lost."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(WORKERS), context.Queue()
    processes = [context.Process(target=_taker, args=(database_url, seed, barrier, results))
                 for seed in range(WORKERS)]
    for process in processes:
        process.start()
    grants = [grant for _ in processes for grant in results.get(timeout=120)]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    for scope, (rate, burst) in LIMITS.items():
        by_moment: Counter[datetime] = Counter()
        for step, account, granted in grants:
            if account == scope:
                by_moment[START + timedelta(seconds=step * STEP_S)] += granted
        assert over_the_limit(by_moment, rate, burst) == [], scope
        assert sum(by_moment.values()) == burst + int(rate * STEP_S * (STEPS - 1)), scope


async def test_a_429_empties_the_bucket_until_the_pause_ends_and_revokes_tokens_given_back_meanwhile(
        db: Database, settings: Settings) -> None:
    """A 429 still pauses the account (docs/decisions/0042): the pause empties
    the bucket and nothing refills before it ends, the pipeline reconciler's takes included; tokens
    a batch gives back during the pause are dropped; afterwards the rate starts from empty."""
    clock = ManualClock(START)
    rated = _settings(settings.database_url, {"cardco:acct_store:test": (2.0, 4)})
    [account] = rated.provider_accounts
    tokens = LookupTokens(db, clock, rated)
    assert await tokens.take(account, 3) == 3
    await tokens.pause(account.id, 10, "provider.rate-limited")
    clock.advance(5)
    await tokens.give_back(account, 3)
    assert await tokens.take(account, 4) == 0, "paused: nothing refilled, nothing given back"
    clock.advance(5)
    assert await tokens.take(account, 4) == 0, "the pause just ended: the bucket starts empty"
    clock.advance(1.5)
    assert await tokens.take(account, 4) == 3
    await tokens.give_back(account, 2)
    assert await tokens.take(account, 4) == 2, "unspent tokens go back once the pause is over"
    clock.advance(60)
    await tokens.give_back(account, 9)
    assert await tokens.take(account, 9) == 4, "never beyond the burst"


async def test_a_take_from_a_clock_behind_the_last_one_refills_nothing(db: Database, settings: Settings) -> None:
    """Docs/decisions/0042: worker hosts' clocks differ a little; a take whose now is earlier than
    the bucket's last refill neither refills nor moves the refill time back, so skew cannot mint
    tokens."""
    ahead, behind = ManualClock(START + timedelta(seconds=2)), ManualClock(START)
    rated = _settings(settings.database_url, {"cardco:acct_store:test": (1.0, 3)})
    [account] = rated.provider_accounts
    assert await LookupTokens(db, ahead, rated).take(account, 3) == 3
    assert await LookupTokens(db, behind, rated).take(account, 3) == 0
    behind.advance(3)  # one second after the host that is ahead
    assert await LookupTokens(db, behind, rated).take(account, 3) == 1
