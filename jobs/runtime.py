"""What actors run with: settings, the clock, a database pool and an HTTP client.

The pool is opened lazily by the first actor that runs, on the worker's event-loop thread (an
asyncio pool belongs to the loop that opened it), and closed by :class:`RuntimeLifecycle` before
that loop stops. Settings come from the environment unless a test has called :func:`configure`
with its own settings and manual clock.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import dramatiq
import httpx
from dramatiq.asyncio import get_event_loop_thread

from gateway.clock import Clock, SystemClock
from gateway.outbox.dispatcher import http_client
from gateway.settings import Settings, load_settings
from gateway.store.db import Database


@dataclass
class Runtime:
    settings: Settings
    clock: Clock
    db: Database
    # Outgoing HTTP (outbox deliveries). No client-side timeout: budgets on the clock cut calls off.
    http: httpx.AsyncClient


_configured: tuple[Settings, Clock] | None = None
_current: Runtime | None = None
# Created with the runtime and dropped with it: an asyncio lock belongs to one event loop.
_opening: asyncio.Lock | None = None


def configure(settings: Settings | None, clock: Clock | None = None) -> None:
    """Run actors with ``settings`` and ``clock`` (None: back to the environment and wall clock).
    The previous runtime must have been closed with :func:`close`."""
    global _configured
    if _current is not None:
        raise RuntimeError("close the current runtime before configuring another")
    _configured = None if settings is None else (settings, clock or SystemClock())


async def current() -> Runtime:
    """This process's runtime, opened on first use in the calling event loop."""
    global _current, _opening
    if _opening is None:
        _opening = asyncio.Lock()
    async with _opening:  # two actor threads starting together must open one pool, not two
        if _current is None:
            settings, clock = _configured or (load_settings(), SystemClock())
            db = await Database.open(settings.database_url, size=4, name="paygate-jobs")
            http = http_client()  # the outbox's keep-alive client; recovery's lookups share it
            _current = Runtime(settings=settings, clock=clock, db=db, http=http)
        return _current


async def close() -> None:
    global _current, _opening
    _opening = None
    if _current is not None:
        opened, _current = _current, None
        await opened.http.aclose()
        await opened.db.close()


class RuntimeLifecycle(dramatiq.Middleware):
    """Closes the runtime's pool on the worker's event loop before the worker shuts it down."""

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(close())
