"""The job system on the real broker: a Dramatiq worker takes the clock's wake-up message and
records its heartbeat in PostgreSQL (DESIGN.md: actors carry references only; Redis only wakes)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import dramatiq
import httpx
import pytest

from gateway.clock import ManualClock
from gateway.settings import Settings
from gateway.store.db import Database


@pytest.fixture
def jobs_runtime(settings: Settings, clock: ManualClock, redis_url: str) -> Iterator[dramatiq.Broker]:
    """The jobs package's own broker, pointed at the test broker, with actors using ``settings``."""
    from jobs import broker, runtime

    broker.flush_all()
    runtime.configure(settings, clock, httpx.AsyncHTTPTransport)  # respx mocks httpx's own transport
    try:
        yield broker
    finally:
        runtime.configure(None)
        broker.flush_all()


def run_worker_until_idle(broker: dramatiq.Broker) -> None:
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        broker.join("paygate", timeout=20_000)
        worker.join()
    finally:
        worker.stop()


async def test_clock_tick_wakes_a_real_worker_that_records_its_heartbeat(
        jobs_runtime: dramatiq.Broker, db: Database, clock: ManualClock) -> None:
    from jobs.clock import tick

    await tick(db, clock)
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)

    rows = await db.fetch_all("SELECT kind, seen_at, beats FROM process_heartbeats ORDER BY kind")
    assert [(row["kind"], row["seen_at"], row["beats"]) for row in rows] == [
        ("clock", clock.now(), 1), ("worker", clock.now(), 1)]


async def test_duplicated_wake_ups_change_nothing_but_the_count(
        jobs_runtime: dramatiq.Broker, db: Database, clock: ManualClock) -> None:
    """A lost or duplicated wake-up changes nothing: work is found from the database."""
    from jobs.heartbeat import heartbeat

    for _ in range(3):
        heartbeat.send()
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    rows = await db.fetch_all("SELECT kind, beats FROM process_heartbeats")
    assert [(row["kind"], row["beats"]) for row in rows] == [("worker", 3)]


async def test_an_earlier_beat_never_moves_seen_at_backwards(db: Database, clock: ManualClock) -> None:
    from jobs.heartbeat import beat

    later = ManualClock(clock.now())
    later.advance(30)
    await beat(db, later, "worker")
    await beat(db, clock, "worker")
    row = await db.fetch_one("SELECT seen_at FROM process_heartbeats")
    assert row == {"seen_at": later.now()}
