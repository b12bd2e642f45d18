"""The dispatcher's delivery lanes over real HTTP ("keep-alive HTTP connections" in the
outbox; gateway/outbox/lanes.py): a sink served by uvicorn on loopback, in this event loop, that
notes which TCP connection (the client's port) carried each delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.outbox.dispatcher import dispatch_due
from gateway.outbox.lanes import Lanes
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


@pytest.fixture
async def sink() -> AsyncIterator[tuple[ConnectionSink, str]]:
    app = ConnectionSink()
    async with served(app) as url:
        yield app, url


async def test_each_delivery_in_flight_keeps_its_own_connection_alive_across_batches(
        db: Any, clock: Any, settings: Settings, sink: tuple[ConnectionSink, str]) -> None:
    """Keep-alive HTTP connections and "deliver concurrently across ordering keys".
    Four attempts with three effects each: every batch claims the four keys' heads and delivers
    them at once, so three batches make twelve deliveries over real HTTP. They take exactly four
    connections, one per delivery in flight, each kept alive from one batch to the next (a lane
    whose answer was not read to its end would lose its connection and open another)."""
    app, url = sink
    settings = settings.model_copy(update={"merchant_sink_url": f"{url}/merchant"})
    seed = Seeder(db, clock, settings)
    attempts = [await seed.attempt() for _ in range(4)]
    for effect in ("order-confirmation", "receipt", "refund"):
        for attempt in attempts:
            await seed.effect(attempt, effect)

    async with Lanes() as lanes:
        assert await dispatch_due(db, clock, settings, lanes) == 12
        assert len(lanes) == 4

    assert len(app.deliveries) == 12
    assert len({port for port, _ in app.deliveries}) == 4


async def test_lanes_beyond_those_kept_are_closed_when_their_delivery_ends() -> None:
    """Lanes sized to the concurrency: several dispatchers on one worker's event loop
    share its lanes; when more deliveries ran at once than lanes are kept, the extra lanes are
    closed as their deliveries end, and the kept ones are reused, not reopened."""
    closed: list[httpx.AsyncBaseTransport] = []

    class Counted(httpx.AsyncBaseTransport):
        async def aclose(self) -> None:
            closed.append(self)

    lanes = Lanes(Counted, keep=2)
    async with lanes.lane() as first, lanes.lane() as second, lanes.lane() as third:
        assert len({id(first), id(second), id(third)}) == 3 and len(lanes) == 3
    assert closed == [first] and len(lanes) == 2
    async with lanes.lane() as again, lanes.lane() as other:
        assert {id(again), id(other)} == {id(second), id(third)}
    await lanes.aclose()
    assert len(closed) == 3 and len(lanes) == 0
