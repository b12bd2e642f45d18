"""Counters of a fleet (docs/decisions/0041): several OS processes count the same
series and flush into PostgreSQL at once; every web process's ``/metrics`` reports the sum, a fresh
process included (a restart loses nothing flushed), and a web process flushes on its clock."""

from __future__ import annotations

import asyncio
import sys

import httpx

from gateway import instruments
from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from gateway.store.counters import flush_every
from gateway.store.db import Database
from tests.integration.metrics_support import scrape

_COUNTING_PROCESS = """
import asyncio, sys
from gateway import instruments
from gateway.store.counters import flush
from gateway.store.db import Database

async def main(url: str, rounds: int) -> None:
    db = await Database.open(url, size=1, name="counting-process")
    for _ in range(rounds):
        for _ in range(10):
            instruments.count(instruments.CLAIMS_LOST, kind="payout")
            instruments.count(instruments.RECONCILIATIONS, kind="payout_recall", outcome="succeeded")
            instruments.observe(instruments.PROVIDER_CALLS, 0.2, kind="payout", operation="create",
                                account="cardco:acct_store:test", outcome="ok")
        await flush(db)
    await db.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_counts_flushed_by_several_processes_at_once_are_summed_in_every_web_process(
        client: httpx.AsyncClient, database_url: str, settings: Settings, clock: ManualClock) -> None:
    processes = [await asyncio.create_subprocess_exec(sys.executable, "-c", _COUNTING_PROCESS, database_url, "20")
                 for _ in range(3)]
    assert [await p.wait() for p in processes] == [0, 0, 0]

    seen = await scrape(client)
    assert seen.value("paygate_payout_claims_lost_total", kind="payout") == 600
    assert seen.value("paygate_payout_reconciliations_total", kind="payout_recall", outcome="succeeded") == 600
    calls = {"kind": "payout", "operation": "create", "account": "cardco:acct_store:test", "outcome": "ok"}
    assert seen.value("paygate_provider_call_seconds_count", **calls) == 600
    assert seen.value("paygate_provider_call_seconds_bucket", le="0.25", **calls) == 600
    assert seen.value("paygate_provider_call_seconds_bucket", le="0.1", **calls) == 0
    assert abs(seen.value("paygate_provider_call_seconds_sum", **calls) - 120) < 1e-6

    other = await Services.open(settings, clock)  # another web process, started after the counting
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(settings, services=other)),
                                     base_url="http://other.test") as second:
            again = await scrape(second)
        fleet = {k: v for k, v in seen.values.items() if not k[0].startswith("paygate_http")}
        assert {k: v for k, v in again.values.items() if not k[0].startswith("paygate_http")} == fleet
    finally:
        await other.close()


async def test_a_web_process_flushes_on_its_clock_between_scrapes(db: Database, clock: ManualClock) -> None:
    flusher = asyncio.create_task(flush_every(db, clock, 5))
    try:
        await asyncio.sleep(0)  # the flusher waits on the clock
        instruments.count(instruments.FENCE_ROLLBACKS, kind="payout")
        assert await db.fetch_all("SELECT * FROM metric_counters") == []
        clock.advance(5)
        for _ in range(200):
            rows = await db.fetch_all("SELECT name, value FROM metric_counters")
            if rows:
                break
            await asyncio.sleep(0.01)
        assert rows == [{"name": "paygate_payout_context_fence_rollbacks_total", "value": 1.0}]
    finally:
        flusher.cancel()
