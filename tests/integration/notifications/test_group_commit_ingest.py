"""Verified notifications recorded and applied in shared transactions (docs/decisions/0073), over
the real app and PostgreSQL with requests really racing, in both batch modes: "savepoints" (one
delivery after another, each in its own savepoint) and "pipelined" (every delivery's statements
sent before any result is read; any failure redoes each alone). Seed 000: acknowledge only after commit;
seed 004, "The Notification Handler" and "Notification Deduplication": each notification recorded
once, applied once, and a failure before commit never acknowledged. To be sure several deliveries
share a transaction, a web process with one lane is kept busy by a first delivery waiting for an
order lock a test connection holds; the others queue behind it and go together once it commits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: grouping is provider-blind)
from tests.integration.notifications.conftest import Webhooks, another_process


async def _lock_waiters(services: Services) -> int:
    row = await services.db.fetch_one("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                            " AND datname = current_database()")
    return int(row["n"]) if row else 0


MODES = ["savepoints", "pipelined"]


async def _recorded_in(webhooks: Webhooks, keys: list[str]) -> int:
    """How many (sub)transactions recorded the notifications of these keys (their rows' xmin)."""
    row = await webhooks.services.db.fetch_one(
        "SELECT count(DISTINCT xmin::text) AS n FROM payment_attempt_events"
        " WHERE kind = 'notification' AND notification_key = ANY(%(keys)s)", {"keys": keys})
    return int(row["n"]) if row else 0


@asynccontextmanager
async def _one_busy_lane(webhooks: Webhooks, settings: Settings, clock: ManualClock, mode: str) -> AsyncIterator[
        tuple[Webhooks, asyncio.Task[Any], psycopg.AsyncConnection[Any]]]:
    """A web process with one lane, busy with a first delivery waiting for its order's lock."""
    async with another_process(settings, clock, ingest_batch_max=16, ingest_batch_lanes=1,
                               ingest_batch_mode=mode) as process, \
            await psycopg.AsyncConnection.connect(settings.database_url) as blocker:
        attempt = await process.attempt()
        await blocker.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (attempt["order_id"],))
        first = asyncio.create_task(process.deliver(process.payment_event(attempt)))
        for _ in range(500):  # poll, not a deadline
            if await _lock_waiters(webhooks.services) >= 1:
                break
            await asyncio.sleep(0.01)
        yield process, first, blocker


async def _queued(process: Webhooks, count: int) -> None:
    group = process.services.notifications._group
    for _ in range(500):
        if len(group._pending) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never saw {count} deliveries queued")


@pytest.mark.parametrize(("batch_max", "lanes", "mode"), [
    (1, 2, "pipelined"), (16, 1, "savepoints"), (16, 2, "savepoints"), (16, 1, "pipelined"), (16, 2, "pipelined")])
async def test_many_racing_deliveries_are_each_recorded_and_applied_once(
        webhooks: Webhooks, settings: Settings, clock: ManualClock, batch_max: int, lanes: int, mode: str) -> None:
    """40 notifications for 20 attempts (each sent twice), all at once, grouped or not: all 204, one
    record per key, one transition and one confirmation per attempt."""
    async with another_process(settings, clock, ingest_batch_max=batch_max, ingest_batch_lanes=lanes,
                               ingest_batch_mode=mode) as process:
        attempts = [await process.attempt() for _ in range(20)]
        events = [process.payment_event(attempt) for attempt in attempts]
        responses = await asyncio.gather(*(process.deliver(event) for event in events * 2))
    assert [r.status_code for r in responses] == [204] * 40
    assert sorted(r["notification_key"] for r in await webhooks.notifications()) == sorted(e["id"] for e in events)
    for attempt in attempts:
        assert await webhooks.transitions(attempt) == ["Succeeded"]
    assert sorted(await webhooks.outbox()) == sorted(f"attempt:{a['attempt_id']}:order-confirmation" for a in attempts)


@pytest.mark.parametrize("mode", MODES)
async def test_deliveries_queued_behind_a_busy_transaction_are_answered_after_theirs_commits(
        webhooks: Webhooks, settings: Settings, clock: ManualClock, mode: str) -> None:
    """Five deliveries queued while the lane is busy are recorded in one transaction, and none is
    answered before it commits."""
    async with _one_busy_lane(webhooks, settings, clock, mode) as (process, first, blocker):
        attempts = [await process.attempt() for _ in range(5)]
        events = [process.payment_event(a) for a in attempts]
        queued = [asyncio.create_task(process.deliver(event)) for event in events]
        await _queued(process, 5)
        assert not any(task.done() for task in queued)  # nothing answered before its commit
        assert [a["attempt_id"] for a in await webhooks.notifications()] == []
        await blocker.rollback()
        responses = await asyncio.gather(first, *queued)
    assert [r.status_code for r in responses] == [204] * 6
    for attempt in attempts:
        assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert len(await webhooks.notifications()) == 6
    # With savepoints each row carries its savepoint's own (sub)transaction id, so only the
    # pipelined batch shows one writer.
    assert await _recorded_in(webhooks, [e["id"] for e in events]) == (1 if mode == "pipelined" else 5)


@pytest.mark.parametrize("mode", MODES)
async def test_a_poisoned_notification_never_fails_the_others_in_its_transaction(
        webhooks: Webhooks, settings: Settings, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
        mode: str) -> None:
    """One delivery's evidence cannot be applied: it alone is 503 (tried again alone, it still
    fails, and nothing of it is recorded); the four sharing its transaction are recorded, applied
    and answered 204 (pipelined: each done again alone after the batch failed)."""
    async with _one_busy_lane(webhooks, settings, clock, mode) as (process, first, blocker):
        attempts = [await process.attempt() for _ in range(5)]
        poisoned = attempts[2]["attempt_id"]
        original = process.services.attempts._send

        async def failing(conn: Any, attempt_id: Any, *args: Any) -> Any:
            if attempt_id == poisoned:
                raise psycopg.errors.CheckViolation("this evidence cannot be applied")
            return await original(conn, attempt_id, *args)

        monkeypatch.setattr(process.services.attempts, "_send", failing)
        events = [process.payment_event(a) for a in attempts]
        queued = [asyncio.create_task(process.deliver(event)) for event in events]
        await _queued(process, 5)
        await blocker.rollback()
        responses = await asyncio.gather(first, *queued)
        assert [r.status_code for r in responses] == [204, 204, 204, 503, 204, 204]
        recorded = {r["notification_key"] for r in await webhooks.notifications()}
        assert events[2]["id"] not in recorded and {e["id"] for i, e in enumerate(events) if i != 2} <= recorded
        assert not process.services.notifications.remembers(webhooks.test_account, events[2]["id"])
        assert [(await webhooks.reload(a))["state"] for a in attempts] == [
            "Succeeded", "Succeeded", "Started", "Succeeded", "Succeeded"]


@pytest.mark.parametrize(("mode", "answered"), [
    ("savepoints", [204, 503, 503, 503, 503]), ("pipelined", [204, 204, 204, 204, 503])])
async def test_when_the_shared_transaction_dies_nobody_in_it_is_acknowledged(
        webhooks: Webhooks, settings: Settings, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
        mode: str, answered: list[int]) -> None:
    """The server ends the shared transaction's session midway (as a crash looks to the gateway):
    nobody in it is acknowledged for it and nothing of it is recorded or remembered. With savepoints
    every delivery in it is 503; pipelined, each is done again alone, the three others recorded
    and 204, the one whose session dies again 503. Each redelivery of a 503 is then handled."""
    async with _one_busy_lane(webhooks, settings, clock, mode) as (process, first, blocker):
        attempts = [await process.attempt() for _ in range(4)]
        doomed = attempts[3]["attempt_id"]
        original = process.services.attempts._send

        async def crashing(conn: Any, attempt_id: Any, *args: Any) -> Any:
            if attempt_id == doomed:
                await webhooks.services.db.fetch_one("SELECT pg_terminate_backend(%(pid)s) AS done",
                                                     {"pid": conn.info.backend_pid})
            return await original(conn, attempt_id, *args)

        monkeypatch.setattr(process.services.attempts, "_send", crashing)
        events = [process.payment_event(a) for a in attempts]
        queued = [asyncio.create_task(process.deliver(event)) for event in events]
        await _queued(process, 4)
        await blocker.rollback()
        responses = await asyncio.gather(first, *queued)
        assert [r.status_code for r in responses] == answered
        acknowledged = [e["id"] for e, r in zip(events, responses[1:], strict=True) if r.status_code == 204]
        # The first's, committed alone before, and those acknowledged: each in its own transaction.
        assert len(await webhooks.notifications()) == 1 + len(acknowledged)
        assert await _recorded_in(webhooks, acknowledged) == len(acknowledged)
        assert [process.services.notifications.remembers(webhooks.test_account, e["id"]) for e in events] == [
            e["id"] in acknowledged for e in events]
        monkeypatch.setattr(process.services.attempts, "_send", original)
        assert [(await process.deliver(event)).status_code for event in events] == [204] * 4
    assert len(await webhooks.notifications()) == 5
    for attempt in attempts:
        assert await webhooks.transitions(attempt) == ["Succeeded"]


async def test_a_pipelined_batch_records_each_once_and_leaves_a_second_of_one_attempt_alone(
        webhooks: Webhooks, settings: Settings, clock: ManualClock) -> None:
    """Seed 004, "Notification Deduplication" and "The Notification Handler", in one pipelined
    batch: two notifications of one attempt never decide on the same locked version (the second is
    done alone after the batch commits, and applies as the no-op it is); a notification no attempt
    takes is recorded and escalated in the batch; one another process already recorded is a
    duplicate there, 204 and not recorded again. Every one answered 204 after its commit."""
    async with _one_busy_lane(webhooks, settings, clock, "pipelined") as (process, first, blocker):
        one, two = await process.attempt(), await process.attempt()
        seen_elsewhere = process.payment_event(two, type_="payment.processing", id="pay_two")
        assert (await webhooks.deliver(seen_elsewhere)).status_code == 204  # recorded by the other process
        events = [process.payment_event(one, id="pay_one"), process.payment_event(one, id="pay_one"),
                  process.payment_event(None), seen_elsewhere, process.payment_event(two, id="pay_two")]
        queued = [asyncio.create_task(process.deliver(event)) for event in events]
        await _queued(process, 5)
        await blocker.rollback()
        responses = await asyncio.gather(first, *queued)
    assert [r.status_code for r in responses] == [204] * 6
    assert await webhooks.transitions(one) == ["Succeeded"]
    assert await webhooks.transitions(two) == ["Succeeded"]
    keys = [row["notification_key"] for row in await webhooks.notifications()]
    assert len(keys) == 6 and all(keys.count(e["id"]) == 1 for e in events)  # the first's, then each once
    # In the batch: one's first, the unmatched one (and the duplicate, recorded before); one's
    # second and two's success (two named by the duplicate already) each alone after it.
    assert await _recorded_in(webhooks, [events[0]["id"], events[2]["id"]]) == 1
    assert await _recorded_in(webhooks, [events[0]["id"], events[1]["id"], events[4]["id"]]) == 3
    assert [e["reason"] for e in await webhooks.escalations()] == ["unmatched-payment"]
