"""The dependencies one gateway process runs with, built once at start-up and passed down."""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis

from gateway.auth.tokens import Tokens
from gateway.clock import Clock, SystemClock
from gateway.settings import Settings
from gateway.store.db import Database
from gateway.store.registry import register_provider_accounts


@dataclass
class Services:
    settings: Settings
    clock: Clock
    db: Database
    redis: aioredis.Redis
    tokens: Tokens

    @classmethod
    async def open(cls, settings: Settings, clock: Clock | None = None) -> Services:
        """Connect to PostgreSQL and the broker, and register the configured provider accounts."""
        clock = clock or SystemClock()
        db = await Database.open(settings.database_url, size=settings.db_pool_size)
        await register_provider_accounts(db, clock, settings.provider_accounts)
        redis = aioredis.Redis.from_url(settings.redis_url, socket_timeout=2, socket_connect_timeout=2)
        tokens = Tokens(db, clock, settings.token_pepper.get_secret_value())
        return cls(settings=settings, clock=clock, db=db, redis=redis, tokens=tokens)

    async def close(self) -> None:
        await self.redis.aclose()
        await self.db.close()
