"""Provider lookups at a rate the provider's limits allow, for the whole fleet (seed 004, "The
Recovery Loop": lookups run "at a rate the provider's limits allow"; "pause the sweep";
docs/decisions/0008 and 0042).

Every provider read a worker makes to reconcile an attempt (a lookup by id or by reference, the
payment-method check) spends one token of its provider account's bucket, a row in PostgreSQL that
every worker process shares. The bucket refills at the account's ``lookup_rate_per_s`` up to its
``lookup_burst`` (settings), by the injected clock. A batch takes the tokens it needs in one
statement per account (:class:`Allowance`); a lookup it cannot pay for is deferred by its caller,
never waited for while a lease is held and never counted as "not found" or as a failed lookup. A
429 pauses the account and empties its bucket until the pause ends (:meth:`LookupTokens.pause`).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from gateway.clock import Clock
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.ratelimits")


class NoToken(Exception):
    """The account's lookup tokens are spent: the lookup waits for a later sweep."""


class LookupTokens:
    """The shared buckets, one per provider account, and the 429 pause that empties one."""

    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings

    async def take(self, account: ProviderAccount, wanted: int, reserve: int = 0) -> int:
        """Up to ``wanted`` tokens of ``account``'s bucket, atomically: how many were granted; with
        a ``reserve``, only tokens above that many (the rest stay for recovery's lookups)."""
        if wanted <= 0:
            return 0
        rate, burst = self._settings.lookup_limit(account)
        row = await self._db.fetch_one(_SQL["take_tokens"], {
            "scope": account.id, "wanted": wanted, "rate": rate, "burst": burst, "reserve": reserve,
            "now": self._clock.now()})
        return 0 if row is None else int(row["granted"])

    async def give_back(self, account: ProviderAccount, count: int) -> None:
        """Tokens taken and not spent; dropped while the account is paused (a 429 revoked them)."""
        if count > 0:
            await self._execute("return_tokens", {"scope": account.id, "count": count, "now": self._clock.now(),
                                                  "burst": self._settings.lookup_limit(account)[1]})

    async def pause(self, account_id: str, seconds: float, reason: str) -> None:
        """A 429: no lookups in the account for ``seconds``, for every worker, and an empty bucket
        when the pause ends."""
        await self._execute("pause_scope", {"scope": account_id, "reason": reason,
                                            "paused_until": self._clock.now() + timedelta(seconds=seconds)})

    async def _execute(self, name: str, params: dict[str, Any]) -> None:
        async with self._db.connection() as conn:  # autocommit: one statement, one round trip
            await conn.execute(_SQL[name], params)


class Allowance:
    """The tokens a sweep's batches of passes hold, per account: each batch reserves what its passes
    may read, taking only what the sweep does not hold already, in one statement per account; the
    passes spend one per provider read. A read no batch reserved a token for takes one more (one
    statement); when none is granted it raises :class:`NoToken`. What is left goes back once, at the
    end of the sweep (docs/decisions/0050)."""

    def __init__(self, tokens: LookupTokens) -> None:
        self._tokens = tokens
        self._held: Counter[str] = Counter()
        self._accounts: dict[str, ProviderAccount] = {}

    async def take(self, account: ProviderAccount, wanted: int) -> int:
        granted = await self._tokens.take(account, wanted)
        self._held[account.id] += granted
        self._accounts[account.id] = account
        return granted

    async def reserve(self, account: ProviderAccount, wanted: int) -> int:
        """Hold ``wanted`` tokens of ``account`` for a batch: the tokens earlier batches took and
        did not spend count, and only the shortfall is taken (no statement when nothing is short).
        How many the batch may spend, at most ``wanted``."""
        short = wanted - self._held[account.id]
        if short > 0:
            await self.take(account, short)
        return min(self._held[account.id], wanted)

    async def spend(self, account: ProviderAccount) -> None:
        """Pay for one provider read on ``account``, or raise :class:`NoToken`."""
        if self._held[account.id] <= 0 and not await self.take(account, 1):
            raise NoToken(account.id)
        self._held[account.id] -= 1

    def revoke(self, account_id: str) -> None:
        """After a 429 on the account: what this batch still holds is not spent."""
        self._held[account_id] = 0

    async def give_back(self) -> None:
        """Return what the sweep took and did not spend."""
        for account_id, count in self._held.items():
            await self._tokens.give_back(self._accounts[account_id], count)
        self._held.clear()
