"""The clock process (``python -m jobs.clock``): on every tick it enqueues the periodic work.

A lost or duplicated wake-up changes nothing: every actor finds its due work in the database by
``:now`` and claims it conditionally, so the clock only sets the pace (DESIGN.md). The tick comes
from ``clock_tick_s``; SIGINT and SIGTERM stop it between ticks.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import dramatiq
import structlog

from gateway.clock import Clock, SystemClock
from gateway.logs import configure_logging
from gateway.settings import load_settings
from gateway.store.db import Database
from gateway.store.migrate import open_current
from jobs import heartbeat as heartbeat_module
from jobs.grants import expire_unused_grants
from jobs.outbox import dispatch_outbox
from jobs.payouts import reconcile_payouts, sweep_payouts
from jobs.reconciliation import reconcile_providers
from jobs.recovery import recover_attempts
from jobs.redelivery import republish_due_jobs
from jobs.refunds import reconcile_refunds, sweep_refunds
from jobs.reminders import send_reminders

log = structlog.get_logger("jobs.clock")

# Every actor the clock wakes on each tick; a new sweep is added here.
PERIODIC: tuple[dramatiq.Actor[..., Any], ...] = (
    heartbeat_module.heartbeat, recover_attempts, dispatch_outbox, send_reminders, sweep_payouts, reconcile_payouts,
    sweep_refunds, reconcile_refunds, expire_unused_grants, republish_due_jobs, reconcile_providers)


async def tick(db: Database, clock: Clock, periodic: tuple[dramatiq.Actor[..., Any], ...] = PERIODIC) -> None:
    """One tick: record the clock's own heartbeat, then wake each periodic actor once."""
    await heartbeat_module.beat(db, clock, "clock")
    for actor in periodic:
        # redis-py is synchronous here; keep the event loop free while it talks to the broker.
        await asyncio.to_thread(actor.send)


async def run(stop: asyncio.Event) -> None:
    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    clock = SystemClock()
    db = await open_current(settings.database_url, size=1, name="paygate-clock")  # refuses an unmigrated one
    log.info("clock_started", tick_s=settings.clock_tick_s, actors=[a.actor_name for a in PERIODIC])
    try:
        while not stop.is_set():
            try:
                await tick(db, clock)
            except Exception as exc:  # noqa: BLE001 - a failed tick is retried on the next one
                log.warning("clock_tick_failed", error_type=type(exc).__name__, error=str(exc))
            try:
                await asyncio.wait_for(stop.wait(), timeout=settings.clock_tick_s)
            except TimeoutError:
                pass
    finally:
        await db.close()
        log.info("clock_stopped")


def main() -> None:
    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run(stop)

    asyncio.run(_main())


if __name__ == "__main__":
    main()
