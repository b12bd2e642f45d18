"""The dispatcher's HTTP clients: one small keep-alive pool per delivery in flight.

httpcore's connection pool does work for every request in proportion to its connections (each
request and each response's close scans every connection, with a socket-readability syscall for
each idle one, and counts the idle ones once per idle connection), so one client shared by 50
concurrent deliveries spent 0.8-1.8 ms of CPU per request (bench/README.md, "Where the time goes";
``bench/http_costs.py``). A lane is a client with a single connection used by one delivery at a
time: its pool has one connection to look at, the connection stays alive (HTTP/1.1 keep-alive)
from one delivery to the next, and no request ever queues behind another. Lanes are created as
deliveries need them, so there are as many as deliveries ever ran at once, and they are reused.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType

import httpx

from gateway.outbound import AiohttpTransport


def lane_transport(verify: ssl.SSLContext) -> httpx.AsyncBaseTransport:
    """One lane: a single connection over aiohttp (gateway.outbound, docs/decisions/0077), kept
    alive. No timeout (the delivery budget on the injected clock cuts a delivery off); ``verify``
    is shared by the lanes (loading the CA bundle costs ~30 ms of CPU per context)."""
    return AiohttpTransport(verify=verify, connections=1)


# Idle lanes kept alive: a batch's concurrent deliveries (dispatcher.BATCH_SIZE). Several
# dispatch_outbox actors at once on a worker's event loop share the lanes; what they opened beyond
# this is closed when it is returned, so a merchant's sink never holds hundreds of idle connections.
KEEP = 50


class Lanes:
    """Transports, each used by one delivery at a time; ``factory`` makes a new one when every
    existing lane is busy (by default :func:`lane_transport`; tests route lanes to an ASGI app).
    At most ``keep`` idle ones stay open."""

    def __init__(self, factory: Callable[[], httpx.AsyncBaseTransport] | None = None, *, keep: int = KEEP) -> None:
        self._keep = keep
        self._factory = factory or functools.partial(lane_transport, httpx.create_ssl_context())
        self._idle: list[httpx.AsyncBaseTransport] = []
        self._all: list[httpx.AsyncBaseTransport] = []

    @asynccontextmanager
    async def lane(self) -> AsyncIterator[httpx.AsyncBaseTransport]:
        """A transport no other delivery is using until this one ends."""
        if self._idle:
            transport = self._idle.pop()
        else:
            transport = self._factory()
            self._all.append(transport)
        try:
            yield transport
        finally:
            if len(self._idle) < self._keep:
                self._idle.append(transport)
            else:
                self._all.remove(transport)
                await transport.aclose()

    def __len__(self) -> int:
        return len(self._all)

    async def aclose(self) -> None:
        transports, self._all, self._idle = self._all, [], []
        for transport in transports:
            await transport.aclose()

    async def __aenter__(self) -> Lanes:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()
