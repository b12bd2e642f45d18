"""Raising escalations and queuing their alerts in the cause's transaction (seed 004, "Escalations";
matrix: "A resolved escalation that recurs opens a new episode whose alert is delivered, not
suppressed by the first episode's outbox key"; "An attempt that meets its escalation condition on
several recovery passes, or in two workers at once, alerts a person once for that open episode")."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from gateway.clock import ManualClock
from gateway.escalations.store import raise_escalation
from gateway.outbox.store import enqueue
from gateway.store.db import Database


async def _raise(db: Database, clock: ManualClock, key: str = "notification:cardco:acct_store:test:evt_1:unmatched") -> int | None:
    async with db.transaction() as conn:
        return await raise_escalation(conn, escalation_key=key, reason="unmatched-payment", now=clock.now(),
                                      reminder_interval_s=900, details={"provider_event_id": "evt_1", "none": None})


async def alerts(db: Database) -> list[str]:
    rows = await db.fetch_all("SELECT dedup_key FROM outbox_messages WHERE kind = 'operator-alert' ORDER BY message_id")
    return [row["dedup_key"] for row in rows]


async def test_one_open_episode_alerts_once(db: Database, clock: ManualClock) -> None:
    first = await _raise(db, clock)
    assert first is not None
    assert await _raise(db, clock) is None
    assert await alerts(db) == [f"escalation:{first}:initial"]
    row = await db.fetch_one("SELECT next_reminder_at, details FROM payment_escalations")
    assert row == {"next_reminder_at": clock.now() + timedelta(seconds=900), "details": {"provider_event_id": "evt_1"}}


async def test_two_concurrent_raisers_open_one_episode(db: Database, clock: ManualClock) -> None:
    results = await asyncio.gather(*(_raise(db, clock) for _ in range(4)))
    assert len([r for r in results if r is not None]) == 1
    assert len(await alerts(db)) == 1


async def test_a_recurring_condition_opens_a_new_episode_whose_alert_is_queued(db: Database, clock: ManualClock) -> None:
    first = await _raise(db, clock)
    clock.advance(60)
    async with db.transaction() as conn:
        await conn.execute("UPDATE payment_escalations SET resolved_at = %(now)s, next_reminder_at = NULL",
                           {"now": clock.now()})
    second = await _raise(db, clock)
    assert second is not None and second != first
    assert await alerts(db) == [f"escalation:{first}:initial", f"escalation:{second}:initial"]


async def test_the_same_effect_is_queued_once_whatever_route_reaches_it(db: Database, clock: ManualClock) -> None:
    """Seed 004: "The same effect reached by different routes ... queues one confirmation"."""
    async with db.transaction() as conn:
        first = await enqueue(conn, dedup_key="attempt:x:order-confirmation", kind="order-confirmation",
                              payload={"order_id": "ORD-1"}, now=clock.now())
        again = await enqueue(conn, dedup_key="attempt:x:order-confirmation", kind="order-confirmation",
                              payload={"order_id": "ORD-1", "route": "notification"}, now=clock.now())
    assert first is not None and again is None
    row = await db.fetch_one("SELECT payload FROM outbox_messages")
    assert row == {"payload": {"order_id": "ORD-1", "dedup_key": "attempt:x:order-confirmation",
                               "kind": "order-confirmation"}}
