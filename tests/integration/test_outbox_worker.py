"""End to end on the real broker: the clock's tick wakes a real Dramatiq worker whose
``dispatch_outbox`` and ``send_reminders`` actors deliver a confirmation, an escalation's alert and
its reminder over real HTTP into the demo sinks app served by uvicorn on 127.0.0.1 (seed 004,
"Downstream Work", "Reminders"; DESIGN.md: actors carry references only, Redis only wakes)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import dramatiq
import httpx
import pytest
import uvicorn
from pydantic import SecretStr

from gateway.clock import ManualClock
from gateway.settings import Settings
from gateway.store.db import Database
from paygate_local import sinks
from paygate_local.servers import free_port
from tests.integration.outbox_support import MERCHANT_SECRET, Seeder
from tests.integration.test_jobs import jobs_runtime, run_worker_until_idle

__all__ = ["jobs_runtime"]


@pytest.fixture
def sinks_url() -> Iterator[str]:
    """The demo sinks app under a real uvicorn server on a free loopback port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(sinks.create_app(), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off", ws="none", http="h11"))
    thread = threading.Thread(target=server.run, name="sinks", daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        threading.Event().wait(0.01)
    else:
        raise RuntimeError("the sinks server did not start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def settings(settings: Settings, sinks_url: str) -> Settings:
    return settings.model_copy(update={
        "merchant_sink_url": f"{sinks_url}/merchant", "alert_sink_url": f"{sinks_url}/alerts",
        "merchant_signing_secret": SecretStr(MERCHANT_SECRET), "reminder_interval_s": 10.0})


async def sink(url: str) -> list[tuple[str, str]]:
    async with httpx.AsyncClient() as http:
        messages = (await http.get(url)).json()["messages"]
    return [(m["kind"], m["dedup_key"]) for m in messages]


async def test_a_real_worker_delivers_effects_alerts_and_reminders_into_the_sinks(
        jobs_runtime: dramatiq.Broker, db: Database, clock: ManualClock, settings: Settings, sinks_url: str) -> None:
    from jobs.clock import tick

    seed = Seeder(db, clock, settings)
    attempt = await seed.attempt()
    await seed.effect(attempt, "order-confirmation")
    escalation_id = await seed.escalate(f"attempt:{attempt}:deadline", attempt)

    await tick(db, clock)
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert await sink(f"{sinks_url}/merchant") == [("order-confirmation", f"attempt:{attempt}:order-confirmation")]
    assert await sink(f"{sinks_url}/alerts") == [("operator-alert", f"escalation:{escalation_id}:initial")]

    clock.advance(10)
    for _ in range(2):  # the reminder is queued by one actor and delivered by the other, in either order
        await tick(db, clock)
        await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert await sink(f"{sinks_url}/alerts") == [("operator-alert", f"escalation:{escalation_id}:initial"),
                                                 ("operator-alert", f"escalation:{escalation_id}:reminder:1")]
    rows = await db.fetch_all("SELECT count(*) AS n FROM outbox_messages WHERE dispatched_at IS NULL")
    assert rows == [{"n": 0}]
