"""Registering configured provider accounts, so attempts can reference them by foreign key."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.clock import Clock
from gateway.settings import ProviderAccount
from gateway.store.db import Database

_REGISTER = """
INSERT INTO provider_accounts (provider_account, provider, environment, registered_at)
VALUES (%(id)s, split_part(%(id)s, ':', 1), split_part(%(id)s, ':', 3), %(now)s)
ON CONFLICT (provider_account) DO NOTHING
"""


async def register_provider_accounts(db: Database, clock: Clock, accounts: Sequence[ProviderAccount]) -> None:
    """Insert every configured account that is not registered yet. Accounts are never deleted:
    attempts keep referring to an account after it leaves the configuration."""
    if not accounts:
        return
    async with db.transaction() as conn:
        async with conn.cursor() as cur:
            await cur.executemany(_REGISTER, [{"id": a.id, "now": clock.now()} for a in accounts])
