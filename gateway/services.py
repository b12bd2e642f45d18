"""The dependencies one gateway process runs with, built once at start-up and passed down."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import redis.asyncio as aioredis

from gateway.auth.tokens import Tokens
from gateway.clock import Clock, SystemClock
from gateway.notifications.handler import NotificationHandler
from gateway.notifications.reconciliation import NotificationReconciliation
from gateway.orders.repository import Orders
from gateway.outbound import outbound_client
from gateway.payments.attempts import Attempts
from gateway.payments.checkout import Checkout
from gateway.payments.client import PaymentClient
from gateway.providers.registry import check_accounts
from gateway.settings import Settings
from gateway.store.db import Database
from gateway.store.migrate import open_current
from gateway.store.registry import register_provider_accounts


@dataclass
class Services:
    settings: Settings
    clock: Clock
    db: Database
    redis: aioredis.Redis
    tokens: Tokens
    http: httpx.AsyncClient
    orders: Orders
    attempts: Attempts
    payments: PaymentClient
    checkout: Checkout
    notifications: NotificationHandler
    reconciliation: NotificationReconciliation

    @classmethod
    async def open(cls, settings: Settings, clock: Clock | None = None,
                   transport: httpx.AsyncBaseTransport | None = None) -> Services:
        """Connect to PostgreSQL (refused when it lacks a migration of this build) and the broker,
        and register the configured provider accounts. Provider calls go over ``transport`` when
        one is injected (the tests' httpx transport, which respx mocks), else over aiohttp
        (gateway.outbound)."""
        clock = clock or SystemClock()
        check_accounts(settings)
        db = await open_current(settings.database_url, size=settings.db_pool_size, name="paygate")
        await register_provider_accounts(db, clock, settings.provider_accounts)
        redis = aioredis.Redis.from_url(settings.redis_url, socket_timeout=2, socket_connect_timeout=2)
        tokens = Tokens(db, clock, settings.token_pepper.get_secret_value(), cache_s=settings.token_cache_s)
        http = outbound_client(transport)
        attempts = Attempts(db, clock, settings)
        payments = PaymentClient(settings, clock, http)
        notifications = NotificationHandler(db, clock, settings, attempts)
        orders = Orders(db, clock)
        return cls(settings=settings, clock=clock, db=db, redis=redis, tokens=tokens, http=http,
                   orders=orders, attempts=attempts, payments=payments,
                   checkout=Checkout(settings, clock, db, orders, attempts, payments),
                   notifications=notifications, reconciliation=NotificationReconciliation(db, clock, notifications))

    async def close(self) -> None:
        await self.checkout.drain()
        await self.http.aclose()
        await self.redis.aclose()
        await self.db.close()
