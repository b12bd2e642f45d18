"""The reconciler decides every escalation and resolution under the attempt's row
lock, in the transaction that writes it, from the state it re-reads there: a notification that
commits while the reconciler's lookup is in flight wins. Real concurrency: the reconciler and the
notification handler run as two tasks on two pooled connections, and the notification commits
between the lookup's answer and the reconciler's write (the lookup is held open until it has)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from gateway.payouts.attempts import PAYOUT
from gateway.pipeline.reconciler import Reconciler
from gateway.providers.calls import ProviderCalls
from gateway.providers.cardco import adapter as cardco_provider
from tests.integration.notifications.conftest import cardco  # noqa: F401 - CardCo whose webhooks reach the gateway
from tests.integration.payouts.conftest import World


async def _race(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """One reconciler pass whose lookup returns only after CardCo's due webhooks were applied."""
    looked, notified = asyncio.Event(), asyncio.Event()

    async def held_lookup(calls: ProviderCalls, attempt: dict[str, Any]) -> list[dict[str, Any]] | None:
        found = await payout_operation.lookup(calls, attempt)
        looked.set()
        await notified.wait()  # the notification commits while this lookup is still in flight
        return found

    async def notify() -> None:
        await looked.wait()
        assert await world.cardco.deliver_pending()  # due webhooks went into the gateway
        notified.set()

    payout_operation = cardco_provider.OPERATIONS["payout"]
    monkeypatch.setitem(cardco_provider.OPERATIONS, "payout", replace(payout_operation, lookup=held_lookup))
    reconciler = Reconciler(PAYOUT, world.services.db, world.clock, world.settings, world.services.http)
    assert (await asyncio.gather(reconciler.run_once(), notify()))[0] == 1


async def _open_escalations(world: World) -> list[str]:
    rows = await world.rows("SELECT escalation_key FROM payment_escalations WHERE resolved_at IS NULL")
    return [row["escalation_key"] for row in rows]


async def test_a_notification_resolving_during_the_lookup_leaves_no_orphan_deadline_escalation(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the escalation deadline, ``payout.paid`` resolves the Unknown attempt while
    the reconciler looks it up; the reconciler re-reads Succeeded under the lock and raises nothing
    (before: a ``deadline`` escalation that nothing closes and that reminds forever)."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved()) == "Unknown"
    world.clock.advance(2 * 3600)  # past the escalation deadline; CardCo completed the payout long ago
    await _race(world, monkeypatch)
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert await _open_escalations(world) == []


async def test_a_processing_notification_during_a_not_found_lookup_prevents_not_applied(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the NotApplied cutoff the lookup finds nothing, but ``payout.processing``
    (CardCo accepted the payout) moves the attempt Unknown -> Started while the lookup is in flight.
    NotApplied is decided from the state re-read under the lock, and only from Unknown: the attempt
    stays Started and no second payout becomes possible (before: NotApplied over Started)."""
    await world.faults({"operation": "create_payout", "action": "drop_response"},
                       {"operation": "list_payouts", "action": "not_found_for_s", "not_found_for_s": 86_400,
                        "times": 0},
                       {"operation": "webhook", "action": "drop", "nth": 2, "times": 0})  # only processing arrives
    assert await world.run(await world.approved()) == "Unknown"
    world.clock.advance(3600)
    await _race(world, monkeypatch)
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Executing", "Started")
    assert [e["detail"]["attempt_state"] for e in await world.history() if e["kind"] == "transition"
            and e["actor"] == "payout-reconciler"] == []  # the reconciler wrote no transition
    assert len(world.ledger()) == 1
