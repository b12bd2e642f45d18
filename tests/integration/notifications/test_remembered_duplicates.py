"""Duplicates answered from the keys this process saw committed (docs/decisions/0064; seed 004,
"Notification Deduplication": a duplicate is success only when the first delivery was recorded;
seed 000: acknowledge only after commit). Real PostgreSQL throughout: "no database" is proven by
closing the web process's pool, after which anything that asks the database fails with a 503."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: the set is provider-blind)
from tests.integration.notifications.conftest import Webhooks, another_process


async def test_a_duplicate_after_commit_is_answered_204_without_the_database(webhooks: Webhooks,
                                                                           services: Services) -> None:
    """The first delivery commits its record and the key is remembered; the redelivery is answered
    204 with the pool closed, i.e. with no query at all, and the record stays the one row."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    assert (await webhooks.deliver(event)).status_code == 204
    rows = await webhooks.notifications()
    assert len(rows) == 1
    await services.db.pool.close()
    assert (await webhooks.deliver(event)).status_code == 204
    assert (await webhooks.deliver(webhooks.payment_event(attempt))).status_code == 503  # a new key: the database


async def test_a_key_whose_transaction_rolled_back_is_not_remembered(
        webhooks: Webhooks, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delivery whose transaction failed is 503 and its key not remembered: the redelivery is
    recorded and applied by the database, not answered as a duplicate of nothing."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)

    async def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise psycopg.OperationalError("connection lost mid-transaction")

    with monkeypatch.context() as patched:
        patched.setattr(services.attempts, "apply_evidence", broken)
        assert (await webhooks.deliver(event)).status_code == 503
    assert not services.notifications.remembers(webhooks.test_account, event["id"])
    assert await webhooks.notifications() == []
    assert (await webhooks.deliver(event)).status_code == 204
    assert len(await webhooks.notifications()) == 1
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert services.notifications.remembers(webhooks.test_account, event["id"])


async def test_a_duplicate_another_process_recorded_is_remembered_once_the_database_said_so(
        webhooks: Webhooks, settings: Settings, clock: ManualClock) -> None:
    """A process that did not record the notification asks the database (a miss proves nothing),
    finds it committed, answers 204, and from then on answers that key without the database."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    assert (await webhooks.deliver(event)).status_code == 204
    async with another_process(settings, clock) as other:
        assert not other.services.notifications.remembers(webhooks.test_account, event["id"])
        assert (await other.deliver(event)).status_code == 204
        await other.services.db.pool.close()
        assert (await other.deliver(event)).status_code == 204
    assert len(await webhooks.notifications()) == 1
    assert await webhooks.transitions(attempt) == ["Succeeded"]


async def test_at_most_the_configured_number_of_keys_is_remembered_least_recently_used_first_out(
        webhooks: Webhooks, settings: Settings, clock: ManualClock) -> None:
    """notification_keys_remembered bounds the set: with 2, the third committed key pushes out the
    least recently used one, which then goes to the database again (503 with the pool closed)."""
    attempts = [await webhooks.attempt() for _ in range(3)]
    events = [webhooks.payment_event(attempt) for attempt in attempts]
    async with another_process(settings, clock, notification_keys_remembered=2) as bounded:
        for event in events[:2]:
            assert (await bounded.deliver(event)).status_code == 204
        assert (await bounded.deliver(events[0])).status_code == 204  # events[0] used last: events[1] goes first
        assert (await bounded.deliver(events[2])).status_code == 204
        held = [bounded.services.notifications.remembers(webhooks.test_account, e["id"]) for e in events]
        assert held == [True, False, True]
        await bounded.services.db.pool.close()
        assert [(await bounded.deliver(e)).status_code for e in events] == [204, 503, 204]
    assert len(await webhooks.notifications()) == 3


async def test_with_none_remembered_every_duplicate_asks_the_database(
        webhooks: Webhooks, settings: Settings, clock: ManualClock) -> None:
    """notification_keys_remembered = 0 turns the set off."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt)
    async with another_process(settings, clock, notification_keys_remembered=0) as off:
        assert (await off.deliver(event)).status_code == 204
        assert (await off.deliver(event)).status_code == 204
        assert not off.services.notifications.remembers(webhooks.test_account, event["id"])
        await off.services.db.pool.close()
        assert (await off.deliver(event)).status_code == 503
