"""Recording each notification once (seed 004, "Notification Deduplication"), with the test
matrix lines each test cites."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from tests.integration.conftest import CARDCO_ONLY
from tests.integration.notifications.conftest import Webhooks, another_process


async def test_a_redelivered_keyed_notification_is_recorded_once_and_queues_nothing_again(webhooks: Webhooks) -> None:
    """Matrix: "A redelivered notification with the same provider event ID for the same account is
    recorded once, returns success rather than a constraint error, and queues no downstream work a
    second time"."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    assert (await webhooks.deliver(event)).status_code == 204
    outbox = await webhooks.outbox()
    assert (await webhooks.deliver(event)).status_code == 204
    assert len(await webhooks.notifications()) == 1
    assert await webhooks.outbox() == outbox == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert await webhooks.transitions(attempt) == ["Succeeded"]


async def test_the_same_event_id_under_another_account_is_recorded_separately(webhooks: Webhooks) -> None:
    """Matrix: "... the same event ID under another account is recorded separately"."""
    test_attempt = await webhooks.attempt("ORD-1")
    live_attempt = await webhooks.attempt("ORD-2", account=webhooks.live_account)
    assert (await webhooks.deliver(webhooks.payment_event(test_attempt, event_id="evt_same"))).status_code == 204
    assert (await webhooks.deliver(webhooks.payment_event(live_attempt, event_id="evt_same"), webhooks.live_account)).status_code == 204
    rows = await webhooks.notifications()
    assert [(r["provider_account"], r["notification_key"]) for r in rows] == [
        (webhooks.test_account, "evt_same"), (webhooks.live_account, "evt_same")]
    assert (await webhooks.reload(test_attempt))["state"] == (await webhooks.reload(live_attempt))["state"] == "Succeeded"


@CARDCO_ONLY  # Stripe events always carry an id
async def test_an_unkeyed_notification_without_a_basis_is_recorded_twice_and_applied_once(webhooks: Webhooks) -> None:
    """Matrix: "A notification whose provider gives no basis for a synthesized key, delivered twice,
    is recorded twice, changes the attempt once, and queues its downstream work once through
    effect-keyed outbox rows"; "An unkeyed notification is always recorded and handled, never
    mistaken for a duplicate"."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt, event_id=None)
    for _ in range(2):
        assert (await webhooks.deliver(event)).status_code == 204
    rows = await webhooks.notifications()
    assert [(r["notification_key"], r["attempt_id"]) for r in rows] == [(None, attempt["attempt_id"])] * 2
    assert await webhooks.transitions(attempt) == ["Succeeded"]
    assert await webhooks.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


@CARDCO_ONLY  # Stripe events always carry an id
@pytest.mark.parametrize("blank", ["", "   "])
async def test_an_empty_event_id_is_treated_as_missing(webhooks: Webhooks, blank: str) -> None:
    """Matrix: "an empty event ID is treated as missing": two different empty-id notifications
    must not share one key and collide."""
    first, second = await webhooks.attempt(), await webhooks.attempt()
    for attempt in (first, second):
        assert (await webhooks.deliver(webhooks.payment_event(attempt, event_id=blank))).status_code == 204
    assert [r["notification_key"] for r in await webhooks.notifications()] == [None, None]
    assert [(await webhooks.reload(a))["state"] for a in (first, second)] == ["Succeeded", "Succeeded"]


async def test_a_key_without_an_account_is_rejected_by_the_database(services: Services) -> None:
    """Matrix: "A notification event with a key but no account is rejected by the database"."""
    with pytest.raises(psycopg.errors.CheckViolation, match="ck_notification_event_fields"):
        await services.db.fetch_one(
            "INSERT INTO payment_attempt_events (occurred_at, kind, actor, notification_key, detail)"
            " VALUES (now(), 'notification', 'test', 'evt_1', '{}') RETURNING event_id")


async def _waiters(services: Services) -> int:
    row = await services.db.fetch_one("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                            " AND datname = current_database()")
    return int(row["n"]) if row else 0


async def _until_waiting(services: Services, count: int) -> None:
    """Poll (not a deadline) until ``count`` sessions wait on a lock."""
    for _ in range(500):
        if await _waiters(services) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never saw {count} sessions waiting on a lock")


async def test_two_concurrent_deliveries_produce_one_handling(webhooks: Webhooks, services: Services,
                                                               settings: Settings, clock: ManualClock) -> None:
    """Matrix: "Two concurrent deliveries of the same notification produce one handling: the second
    waits on the first's uncommitted insert and returns success after it commits". Two requests to
    two web processes (one process waits in itself, the test below); a third connection holds the
    order lock so the first delivery is inside its transaction, its notification row inserted but
    uncommitted, when the second arrives."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    async with await psycopg.AsyncConnection.connect(services.settings.database_url) as blocker, \
            another_process(settings, clock, webhooks.provider) as other:
        await blocker.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (attempt["order_id"],))
        first = asyncio.create_task(webhooks.deliver(event))
        await _until_waiting(services, 1)   # first: recorded, waiting for the order lock
        second = asyncio.create_task(other.deliver(event))
        await _until_waiting(services, 2)   # second: waiting on the first's uncommitted key
        await blocker.rollback()
        responses = await asyncio.gather(first, second)
    assert [r.status_code for r in responses] == [204, 204]
    assert len(await webhooks.notifications()) == 1
    assert await webhooks.transitions(attempt) == ["Succeeded"]
    assert await webhooks.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_a_second_delivery_to_the_same_process_waits_there_for_the_first(webhooks: Webhooks,
                                                                                services: Services) -> None:
    """The same matrix line within one web process (docs/decisions/0064): the second delivery waits
    in the process for the first's transaction, holding no connection and no lock wait in
    PostgreSQL, and is answered 204 once the first committed; nothing is recorded twice."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    async with await psycopg.AsyncConnection.connect(services.settings.database_url) as blocker:
        await blocker.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (attempt["order_id"],))
        first = asyncio.create_task(webhooks.deliver(event))
        await _until_waiting(services, 1)   # first: recorded, waiting for the order lock
        second = asyncio.create_task(webhooks.deliver(event))
        for _ in range(20):
            await asyncio.sleep(0.01)
            assert await _waiters(services) == 1 and not second.done()
        await blocker.rollback()
    responses = await asyncio.gather(first, second)
    assert [r.status_code for r in responses] == [204, 204]
    assert len(await webhooks.notifications()) == 1
    assert await webhooks.transitions(attempt) == ["Succeeded"]
    assert await webhooks.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_a_failure_before_commit_is_5xx_and_the_redelivery_is_handled(
        webhooks: Webhooks, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Matrix: "A failure before the notification transaction commits returns an error status, and
    the provider's redelivery is handled normally"."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)

    async def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise psycopg.OperationalError("connection lost mid-transaction")

    with monkeypatch.context() as patched:
        patched.setattr(services.attempts, "apply_evidence", broken)
        response = await webhooks.deliver(event)
    assert response.status_code == 503 and response.json()["code"] == "notification.not_recorded"
    assert await webhooks.notifications() == [] and await webhooks.outbox() == []
    assert (await webhooks.deliver(event)).status_code == 204
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert len(await webhooks.notifications()) == 1
