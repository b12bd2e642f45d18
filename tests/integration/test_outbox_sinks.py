"""The dispatcher's keep-alive pools over real HTTP, one per sink (gateway/outbox/sinks.py,
docs/decisions/0077): a sink served by uvicorn on loopback, in this event loop, that notes which
TCP connection (the client's port) carried each delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.outbound import AiohttpTransport
from gateway.outbox.dispatcher import dispatch_due
from gateway.outbox.sinks import sink_transport
from gateway.settings import Settings
from tests.integration.loopback import served
from tests.integration.outbox_support import Seeder, settings

__all__ = ["settings"]


class ConnectionSink:
    """Answers every POST 204 and records ``(client port, path)`` per delivery."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, str]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        self.deliveries.append((scope["client"][1], scope["path"]))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def ports(self, path: str) -> set[int]:
        return {port for port, delivered in self.deliveries if delivered == path}


@pytest.fixture
async def sink() -> AsyncIterator[tuple[ConnectionSink, str]]:
    app = ConnectionSink()
    async with served(app) as url:
        yield app, url


async def test_a_sinks_pool_keeps_its_connections_alive_between_deliveries(
        db: Any, clock: Any, settings: Settings, sink: tuple[ConnectionSink, str]) -> None:
    """Keep-alive HTTP connections and "deliver concurrently across ordering keys".
    Four attempts with three effects each: every batch claims the four keys' heads and delivers
    them at once, so three batches make twelve deliveries over real HTTP, on four connections of
    the merchant sink's pool, kept alive from one batch to the next and on to a later pass (a
    delivery whose answer was not read to its end would lose its connection and open another)."""
    app, url = sink
    settings = settings.model_copy(update={"merchant_sink_url": f"{url}/merchant"})
    seed = Seeder(db, clock, settings)
    attempts = [await seed.attempt() for _ in range(4)]
    for effect in ("order-confirmation", "receipt", "refund"):
        for attempt in attempts:
            await seed.effect(attempt, effect)

    async with sink_transport() as sinks:
        assert await dispatch_due(db, clock, settings, sinks) == 12
        first_pass = app.ports("/merchant")
        await seed.effect(attempts[0], "shipment")
        assert await dispatch_due(db, clock, settings, sinks) == 1

    assert len(app.deliveries) == 13 and len(first_pass) == 4
    assert app.ports("/merchant") == first_pass


async def test_merchant_confirmations_and_alerts_have_a_pool_each(
        db: Any, clock: Any, settings: Settings, sink: tuple[ConnectionSink, str]) -> None:
    """One keep-alive pool per sink: the merchant's confirmations and the operator's alerts,
    though both sinks are on one origin here, never share a connection; each sink's deliveries,
    one pass after another, stay on their own kept-alive connection."""
    app, url = sink
    settings = settings.model_copy(update={"merchant_sink_url": f"{url}/merchant", "alert_sink_url": f"{url}/alerts"})
    seed = Seeder(db, clock, settings)
    attempt = await seed.attempt()
    async with sink_transport() as sinks:
        for n, effect in enumerate(("order-confirmation", "receipt", "refund")):
            await seed.effect(attempt, effect)
            await seed.escalate(f"sink-pools-{n}", attempt)
            assert await dispatch_due(db, clock, settings, sinks) == 2
        assert sinks.pools == ("sink:merchant", "sink:alerts")

    merchant, alerts = app.ports("/merchant"), app.ports("/alerts")
    assert len(app.deliveries) == 6
    assert len(merchant) == 1 and len(alerts) == 1 and merchant != alerts


async def test_a_sinks_pool_is_bounded(db: Any, clock: Any, settings: Settings,
                                       sink: tuple[ConnectionSink, str]) -> None:
    """A pool holds at most its bound of connections: six deliveries at once on a pool of two
    connections all arrive, over two connections, the others waiting their turn within the
    delivery budget."""
    app, url = sink
    settings = settings.model_copy(update={"merchant_sink_url": f"{url}/merchant"})
    seed = Seeder(db, clock, settings)
    for attempt in [await seed.attempt() for _ in range(6)]:
        await seed.effect(attempt, "order-confirmation")
    async with AiohttpTransport(connections=2) as sinks:
        assert await dispatch_due(db, clock, settings, sinks) == 6
    assert len(app.deliveries) == 6 and len(app.ports("/merchant")) == 2
