"""A PostgreSQL restart fails only the requests in flight (docs/decisions/0003).

The test runs its own embedded PostgreSQL (paygate_local/servers.py), so it can shut it down
fast (every session terminated, as in a restart or failover) and start it again, under the real
gateway app (Starlette in-process, the real pool, the real broker), with requests before, during
and after. Without a checkout check every pooled connection the restart killed would fail one
request after the server is back; ``/readyz`` must report the outage while it lasts.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import build_settings
from gateway.store.migrate import migrate
from paygate_local.servers import EmbeddedPostgres
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, TEST_PEPPER, account_config
from tests.server_dirs import server_dir

POOL_SIZE = 4
CONCURRENCY = 8
_order_ids = itertools.count(1)


@dataclass
class Gateway:
    server: EmbeddedPostgres
    services: Services
    http: httpx.AsyncClient
    merchant: dict[str, str] = field(default_factory=dict)

    async def create_order(self) -> int:
        """One real request: token check and an order insert, each through the pool."""
        response = await self.http.post("/v1/orders", headers=self.merchant, json={
            "order_id": f"ORD-R{next(_order_ids)}", "customer_id": "cus_1", "amount_minor": 4250,
            "currency": "EUR", "payment_method": "pm_card_visa", "provider_account": TEST_ACCOUNT})
        return response.status_code

    async def burst(self, n: int = CONCURRENCY) -> list[int]:
        return list(await asyncio.gather(*(self.create_order() for _ in range(n))))

    async def ready(self) -> int:
        return (await self.http.get("/readyz")).status_code


@pytest.fixture
async def gateway(redis_url: str, clock: ManualClock) -> AsyncIterator[Gateway]:
    with server_dir("paygate-restart-pg-") as folder:
        server = EmbeddedPostgres(folder / "pg", ephemeral=True)
        try:
            migrate(server.url(), clock)
            settings = build_settings({
                "database_url": server.url(), "redis_url": redis_url, "token_pepper": TEST_PEPPER,
                "log_format": "console", "db_pool_size": POOL_SIZE,
                "provider_accounts": [account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT)]})
            services = await Services.open(settings, clock)
            try:
                app = create_app(settings, services=services)
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                                             base_url="http://gateway.test") as http:
                    token = await services.tokens.create("merchant", "merchant_1")
                    yield Gateway(server, services, http, {"Authorization": f"Bearer {token}"})
            finally:
                await services.close()
        finally:
            server.stop()


async def _restart(gateway: Gateway) -> list[int]:
    """Fast shutdown, ``/readyz`` while the server is down, start; the readiness answers seen."""
    await asyncio.to_thread(gateway.server.shut_down_fast)
    seen = [await gateway.ready()]
    await asyncio.to_thread(gateway.server.start)
    return seen


async def test_after_a_quiet_restart_no_request_fails_on_a_dead_pooled_connection(gateway: Gateway) -> None:
    """Every pooled connection dies with the server; the first requests after it
    is back must each get a live one (today: one failure per pooled connection)."""
    # The pool opens connections in the background while requests wait: on a busy machine one
    # burst can end before the last one is open, so burst until every pooled connection exists.
    for _ in range(20):
        assert await gateway.burst() == [201] * CONCURRENCY
        if gateway.services.db.pool.get_stats()["pool_size"] == POOL_SIZE:
            break
    assert gateway.services.db.pool.get_stats()["pool_size"] == POOL_SIZE  # all of them were in use

    down = await _restart(gateway)
    assert down == [503], "readyz reports the outage while the server is down"

    assert await gateway.burst() == [201] * CONCURRENCY
    assert await gateway.burst() == [201] * CONCURRENCY
    assert await gateway.ready() == 200


async def test_a_restart_under_load_fails_at_most_the_requests_in_flight(gateway: Gateway) -> None:
    """With requests arriving before, during and after a fast restart, only the
    ones in flight when the server went down may fail; every request started after the server
    accepts connections again succeeds, and readyz says 503 while it is down, 200 after."""
    results: list[tuple[float, int]] = []
    stop = asyncio.Event()

    async def client() -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                status = await gateway.create_order()
            except Exception:  # noqa: BLE001 - a transport-level failure is a failed request too
                status = 0
            results.append((started, status))

    def after(moment: float) -> list[int]:
        return [status for started, status in results if started >= moment]

    load = [asyncio.create_task(client()) for _ in range(CONCURRENCY)]
    try:
        while len(results) < 2 * CONCURRENCY:  # before: the pool is busy and full
            await asyncio.sleep(0.05)
        down = await _restart(gateway)
        back_at = time.monotonic()
        deadline = back_at + 60  # real time, only so that a broken gateway cannot hang the suite
        while len(after(back_at)) < 2 * CONCURRENCY and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.gather(*load)

    assert down == [503]
    failed = [(t, s) for t, s in results if s != 201]
    assert len(failed) <= CONCURRENCY, f"more failures than requests in flight: {failed}"
    assert len(after(back_at)) >= 2 * CONCURRENCY
    assert set(after(back_at)) == {201}, "a request started after the restart failed"
    assert await gateway.ready() == 200
