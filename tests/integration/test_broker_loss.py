"""Losing the broker loses no work (DESIGN.md: "PostgreSQL is the single source
of truth, Redis only carries wake-up messages (losing the broker loses no payment; sweeps find due
work from the database)"), on the real Valkey with real Dramatiq workers and CardCo in-process.

Every message the broker carries is walked: the clock's wake-ups (checkout recovery, the outbox
dispatcher, reminders, the payout and refund sweepers and reconcilers, the grants sweep) carry
nothing and are sent again on every tick; a payout, recall or refund job is a message built from
its grant, and the redelivery sweep publishes it again from the database (docs/decisions/0022).
``FLUSHALL`` mid-flow, and a worker gone while it held a delayed payout job, delay each path by
one sweep and lose nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import dramatiq
import httpx
import pytest
import respx
from pydantic import SecretStr

from gateway.escalations.store import raise_escalation
from gateway.outbox.dispatcher import dispatch_due
from gateway.redelivery.republish import republish_due
from gateway.settings import Settings
from tests.integration.broker_support import flushall, queued, start_worker, until_held
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.outbox_support import MERCHANT_SECRET
from tests.integration.payouts.conftest import World, world
from tests.integration.payouts.recall_helpers import paid, recall_calls
from tests.integration.recovery.test_recovery_loop import row, unknown_payment
from tests.integration.refunds.conftest import refund_calls
from tests.integration.test_jobs import jobs_runtime, run_worker_until_idle

__all__ = ["jobs_runtime", "shop", "world"]

SINKS = "http://sinks.test"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={
        "merchant_sink_url": f"{SINKS}/merchant", "alert_sink_url": f"{SINKS}/alerts",
        "merchant_signing_secret": SecretStr(MERCHANT_SECRET), "reminder_interval_s": 10.0})


@pytest.fixture
def sinks(cardco_http: respx.MockRouter) -> Iterator[dict[str, respx.Route]]:
    """The merchant and alert sinks, answering 200 through the same respx router as CardCo."""
    yield {name: cardco_http.post(f"{SINKS}/{name}").mock(return_value=httpx.Response(200))
           for name in ("merchant", "alerts")}


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _tick_and_work(world: World, broker: dramatiq.Broker) -> None:
    """One clock tick, and a real worker that runs whatever it woke until the broker is idle."""
    from jobs.clock import tick

    await tick(world.services.db, world.clock)
    await asyncio.to_thread(run_worker_until_idle, broker)


async def _relay(world: World) -> None:
    """The outbox relay, as ``dispatch_outbox`` runs it, in this process."""
    from jobs.outbox import PUBLISHERS

    async with httpx.AsyncHTTPTransport() as sinks:  # respx mocks httpx's own transport
        await dispatch_due(world.services.db, world.clock, world.settings, sinks, publishers=PUBLISHERS)


async def test_flushall_mid_flow_delays_every_path_by_one_sweep_and_loses_nothing(
        world: World, shop: Shop, jobs_runtime: dramatiq.Broker, sinks: dict[str, respx.Route]) -> None:
    """Walk every other message the broker carries and show, with a test that
    flushes the broker mid-flow (FLUSHALL on the real server), that losing it delays work by at
    most one sweep and loses none: checkout recovery, outbox, reminders, payouts, recalls (and
    refunds, which start through the outbox the same way); seed
    000 section 7 ("The Queue Message Is Transport"); seed 004 "The Recovery Loop", "Downstream
    Work", "Reminders"."""
    from jobs.outbox import dispatch_outbox

    broker, db, clock = jobs_runtime, world.services.db, world.clock
    await paid(world, "PAY-R")  # a paid payout, to be recalled below
    await world.create("PAY-3107")
    grant = (await world.submit("PAY-3107"))["grant"]

    # A worker takes the payout's job, a message delayed to the grant's not_before, and holds it;
    # the broker loses its data, and then that worker is gone: its requeue finds nothing to restore.
    holder = start_worker(broker)
    try:
        dispatch_outbox.send()
        await until_held(broker)
        flushall(broker)
    finally:
        await asyncio.to_thread(holder.stop)
    assert queued(broker) == 0

    # Mid-flow: an Unknown checkout due for recovery, an episode due for a reminder, the recall's
    # and a merchant refund's jobs published, an operator alert not yet delivered, and the clock's
    # wake-ups, all in flight.
    await shop.order("ORD-R")
    assert (await shop.pay("ORD-R")).json()["state"] == "Succeeded"
    assert (await shop.http.post("/v1/orders/ORD-R/refund", headers=shop.merchant, json={})).status_code == 200
    checkout = await unknown_payment(shop, action="drop_response")
    async with db.transaction() as conn:
        reminded = await raise_escalation(conn, escalation_key="ops:broker-loss:reminded", reason="deadline",
                                          now=clock.now(), reminder_interval_s=world.settings.reminder_interval_s)
    clock.advance(60)
    assert (await world.post("/v1/payouts/PAY-R/recall")).status_code == 200
    await _relay(world)
    async with db.transaction() as conn:
        alerted = await raise_escalation(conn, escalation_key="ops:broker-loss:alerted", reason="deadline",
                                         now=clock.now(), reminder_interval_s=world.settings.reminder_interval_s)
    from jobs.clock import tick

    await tick(db, clock)
    assert queued(broker) > 0
    flushall(broker)

    # A fresh worker finds nothing to do: the broker's copy of all that work is gone.
    await asyncio.to_thread(run_worker_until_idle, broker)
    assert (await row(shop, checkout["attempt_id"]))["state"] == "Unknown"
    assert recall_calls(world) == [] and refund_calls(shop) == [] and _sent(world) == ["PAY-R-a1"]
    pending = await db.fetch_all("SELECT dedup_key FROM outbox_messages WHERE dispatched_at IS NULL")
    assert f"escalation:{alerted}:initial" in [r["dedup_key"] for r in pending]

    # One clock tick later every path has run, from the database alone.
    clock.advance(world.settings.clock_tick_s)
    await _tick_and_work(world, broker)
    assert (await row(shop, checkout["attempt_id"]))["state"] == "Succeeded"
    assert len(shop.ledger()) == 2, "ORD-R paid at once, ORD-5521 found by recovery"
    assert len(recall_calls(world)) == 1 and len(refund_calls(shop)) == 1
    [episode] = await db.fetch_all("SELECT reminder_count FROM payment_escalations WHERE escalation_id = %(e)s",
                                   {"e": reminded})
    assert episode["reminder_count"] == 1
    [alert] = await db.fetch_all("SELECT dispatched_at FROM outbox_messages WHERE dedup_key = %(k)s",
                                 {"k": f"escalation:{alerted}:initial"})
    assert alert["dispatched_at"] is not None and sinks["alerts"].called

    # The payout's job was lost with the worker that held it: the first sweep at not_before pays it, once.
    assert _sent(world) == ["PAY-R-a1"]
    clock.set(_when(grant["not_before"]))
    await _tick_and_work(world, broker)
    assert _sent(world) == ["PAY-R-a1", "PAY-3107-a1"]
    assert (await world.payout("PAY-3107"))["attempts"][0]["grant_id"] == grant["grant_id"]
    assert queued(broker) == 0


async def test_two_messages_for_one_grant_make_one_cardco_call(world: World, jobs_runtime: dramatiq.Broker) -> None:
    """Single-use grants and the atomic claim make a duplicate message harmless
    (prove it: two messages for one grant, one provider call); seed 000 section 7: "If someone
    copies the message, the second copy meets a consumed grant"; matrix: "Two workers race for one
    grant -> one wins, one claim.lost, 1 call in total". The relay and the sweep both publish the
    job; two worker threads take both."""
    from jobs.outbox import PUBLISHERS
    from jobs.redelivery import SOURCES

    job = await world.approved()
    await _relay(world)
    published = await republish_due(world.services.db, world.clock, SOURCES, PUBLISHERS, pace_s=2.5)
    assert published["payout-job"] == 1
    assert queued(jobs_runtime) == 2
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert len(world.submits()) == 1
    [attempt] = (await world.payout())["attempts"]
    assert attempt["grant_id"] == job.grant_id
    [duplicate] = [e["detail"] for e in await world.history() if e["kind"] == "delivery"]
    assert duplicate["code"] in ("claim.lost", "grant.consumed")


def _sent(world: World) -> list[Any]:
    """The client references of the payouts CardCo was asked to make, in order."""
    return [body["client_reference"] for body in world.sent_bodies()]
