"""What actors run with: settings, the clock, a database pool and an HTTP client.

The pool is opened lazily by the first actor that runs, on the worker's event-loop thread (an
asyncio pool belongs to the loop that opened it), only on a database that has every migration of
this build, and closed by :class:`RuntimeLifecycle` before that loop stops. Settings come from
the environment unless a test has called :func:`configure` with its own settings and manual clock.
What an actor counted (``gateway.instruments``) is added to the fleet's sums after every message
and before the pool closes (docs/decisions/0041).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dramatiq
import httpx
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.broker import MessageProxy

from gateway.clock import Clock, SystemClock
from gateway.collector import settle_collector
from gateway.outbound import outbound_client
from gateway.outbox.sinks import sink_transport
from gateway.providers.registry import check_accounts
from gateway.settings import Settings, load_settings
from gateway.store.counters import flush_logged
from gateway.store.db import Database
from gateway.store.migrate import open_current


@dataclass
class Runtime:
    settings: Settings
    clock: Clock
    db: Database
    # Outgoing HTTP to the providers (gateway.outbound): budgets on the clock cut calls off.
    http: httpx.AsyncClient
    # The outbox's deliveries: a bounded keep-alive pool per sink (gateway.outbox.sinks).
    outbox: httpx.AsyncBaseTransport


_configured: tuple[Settings, Clock, Callable[[], httpx.AsyncBaseTransport] | None] | None = None
_current: Runtime | None = None
# Created with the runtime and dropped with it: an asyncio lock belongs to one event loop.
_opening: asyncio.Lock | None = None


def configure(settings: Settings | None, clock: Clock | None = None,
              transport: Callable[[], httpx.AsyncBaseTransport] | None = None) -> None:
    """Run actors with ``settings``, ``clock``, and provider calls and outbox deliveries over
    transports ``transport`` makes (None: back to the environment, the wall clock and aiohttp,
    gateway.outbound). The previous runtime must have been closed with :func:`close`."""
    global _configured
    if _current is not None:
        raise RuntimeError("close the current runtime before configuring another")
    _configured = None if settings is None else (settings, clock or SystemClock(), transport)


async def current() -> Runtime:
    """This process's runtime, opened on first use in the calling event loop."""
    global _current, _opening
    if _opening is None:
        _opening = asyncio.Lock()
    async with _opening:  # two actor threads starting together must open one pool, not two
        if _current is None:
            settings, clock, transport = _configured or (load_settings(), SystemClock(), None)
            check_accounts(settings)  # as the web process does: an account no adapter serves safely
            # A database that lacks a migration of this build is refused: every actor fails until
            # `paygate db migrate` ran (docs/migrations.md); its messages are retried, the sweeps
            # find the work again in the database.
            db = await open_current(settings.database_url, size=4, name="paygate-jobs")
            _current = Runtime(settings=settings, clock=clock, db=db,
                               http=outbound_client(transport() if transport else None),
                               outbox=transport() if transport else sink_transport())
        return _current


async def close() -> None:
    global _current, _opening
    _opening = None
    if _current is not None:
        opened, _current = _current, None
        await flush_logged(opened.db)
        await opened.http.aclose()
        await opened.outbox.aclose()
        await opened.db.close()


async def _flush() -> None:
    if _current is not None:
        await flush_logged(_current.db)


class RuntimeLifecycle(dramatiq.Middleware):
    """Settles the worker process's garbage collector once its actors are loaded
    (:func:`gateway.collector.settle_collector`), flushes what each message counted, and closes
    the runtime's pool on the worker's event loop before the worker shuts it down."""

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        settle_collector()

    def after_process_message(self, broker: dramatiq.Broker, message: MessageProxy, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(_flush())

    def after_skip_message(self, broker: dramatiq.Broker, message: MessageProxy) -> None:
        self.after_process_message(broker, message)

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(close())
