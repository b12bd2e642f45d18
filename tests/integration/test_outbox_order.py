"""Per-ordering-key delivery order (seed 004, "Downstream Work"; checklist items 18 and 21): a row is
eligible only when no earlier row with its ordering key is unfinished, whether that row is pending,
backing off, dead-lettered or locked by another dispatcher; operator alerts never wait."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from gateway.outbox.dispatcher import dispatch_batch, dispatch_due
from tests.integration.outbox_support import Receiver, World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


async def test_a_refund_queued_after_a_confirmation_is_not_delivered_before_it(world: World) -> None:
    """Matrix: "A refund effect queued after a confirmation for the same attempt is not delivered
    before it." One batch delivers only the confirmation; the refund follows once it is settled."""
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    refund = await world.effect(attempt, "refund")

    assert await dispatch_batch(world.db, world.clock, world.settings, world.sinks) == 1
    assert world.receiver.keys() == [f"attempt:{attempt}:order-confirmation"]

    assert await world.dispatch() == 1
    assert world.receiver.keys() == [f"attempt:{attempt}:order-confirmation", f"attempt:{attempt}:refund"]
    for message_id in (confirmation, refund):
        row = await world.message(message_id)
        assert (row["dispatched_at"], row["delivery_attempts"], row["last_error"]) == (world.clock.now(), 1, None)


async def test_a_backing_off_confirmation_blocks_its_refund_while_other_attempts_flow(world: World) -> None:
    """Matrix: "A confirmation backing off to a later next_attempt_at still blocks the same attempt's
    refund, while other attempts' rows are delivered"."""
    stuck, other = await world.attempt(), await world.attempt()
    confirmation = await world.effect(stuck, "order-confirmation")
    await world.effect(stuck, "refund")
    await world.effect(other, "order-confirmation")
    await world.effect(other, "refund")
    world.receiver.failing[f"attempt:{stuck}:order-confirmation"] = 503

    await world.dispatch()
    assert world.receiver.keys() == [f"attempt:{other}:order-confirmation", f"attempt:{other}:refund"]
    row = await world.message(confirmation)
    assert row["next_attempt_at"] > world.clock.now() and row["delivery_attempts"] == 1

    world.clock.advance(0.5)  # the refund is due, its predecessor is not: nothing moves
    assert await world.dispatch() == 0

    del world.receiver.failing[f"attempt:{stuck}:order-confirmation"]
    world.clock.advance(0.5)
    await world.dispatch()
    assert world.receiver.keys()[2:] == [f"attempt:{stuck}:order-confirmation", f"attempt:{stuck}:refund"]


async def test_a_row_locked_by_another_dispatcher_blocks_its_successor(world: World) -> None:
    """Matrix: "A dispatcher that finds an attempt's earliest row locked by another dispatcher does not
    deliver that attempt's later row." Two dispatchers on two connections: the first holds the
    confirmation's row lock while its delivery is in flight; the second, running meanwhile, skips
    the locked row but must not treat the refund as eligible, and still delivers other attempts'."""
    attempt, other = await world.attempt(), await world.attempt()
    await world.effect(attempt, "order-confirmation")
    await world.effect(attempt, "refund")
    release, arrived = world.receiver.hold(f"attempt:{attempt}:order-confirmation")

    first = asyncio.create_task(dispatch_batch(world.db, world.clock, world.settings, world.sinks))
    await asyncio.wait_for(arrived.wait(), 10)
    await world.effect(other, "order-confirmation")

    assert await dispatch_batch(world.db, world.clock, world.settings, world.sinks) == 1
    assert world.receiver.keys() == [f"attempt:{other}:order-confirmation"]

    release.set()
    assert await asyncio.wait_for(first, 10) == 1
    await world.dispatch()
    assert world.receiver.keys() == [f"attempt:{other}:order-confirmation", f"attempt:{attempt}:order-confirmation",
                                     f"attempt:{attempt}:refund"]


@pytest.mark.parametrize("confirmation_state", ["backing off", "dead-lettered"])
async def test_an_operator_alert_never_waits_behind_the_attempts_effects(world: World, receiver: Receiver,
                                                                         confirmation_state: str) -> None:
    """Matrix: "An operator alert for an attempt whose confirmation is dead-lettered or backing off
    is delivered without waiting behind it"."""
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    if confirmation_state == "dead-lettered":
        await world.fail_until_dead(f"attempt:{attempt}:order-confirmation")
        assert (await world.message(confirmation))["dead_lettered_at"] is not None
    else:
        receiver.failing[f"attempt:{attempt}:order-confirmation"] = 500
        await world.dispatch()
        assert (await world.message(confirmation))["next_attempt_at"] > world.clock.now()

    escalation_id = await world.escalate(f"attempt:{attempt}:deadline", attempt)
    await world.dispatch()
    assert f"escalation:{escalation_id}:initial" in receiver.keys("alerts")
    assert (await world.message(confirmation))["dispatched_at"] is None


async def test_two_dispatchers_racing_over_the_same_keys_deliver_each_key_in_order(world: World) -> None:
    """Deliver concurrently across ordering keys while keeping each key in order, with
    two dispatchers at once (seed 004, "Downstream Work": per-ordering-key order, at least once).
    Six attempts with four effects each, drained by two dispatchers racing, each with its own
    connection and transport, while one attempt's first effect fails its first delivery: each row
    arrives once, each attempt's in message_id order, and the failing attempt's later effects wait
    for it, though other keys' deliveries in the same concurrent batch go through."""
    attempts = [await world.attempt() for _ in range(6)]
    order: dict[str, list[str]] = {str(attempt): [] for attempt in attempts}
    for effect in ("order-confirmation", "receipt", "shipment", "refund"):
        for attempt in attempts:
            await world.effect(attempt, effect)
            order[str(attempt)].append(f"attempt:{attempt}:{effect}")
    stuck = f"attempt:{attempts[2]}:order-confirmation"
    world.receiver.failing[stuck] = 503
    app = world.receiver.app()

    async with httpx.ASGITransport(app=app) as other_sinks:
        other = dispatch_due(world.db, world.clock, world.settings, other_sinks)
        claimed = await asyncio.gather(world.dispatch(), other)
    assert sum(claimed) == 6 * 4 - 3  # the failed row once; its three successors not at all
    assert [key for key in world.receiver.keys() if key.startswith(f"attempt:{attempts[2]}:")] == []

    del world.receiver.failing[stuck]
    world.clock.advance(world.settings.outbox_backoff_initial_s)
    async with httpx.ASGITransport(app=app) as other_sinks:
        await asyncio.gather(world.dispatch(), dispatch_due(world.db, world.clock, world.settings, other_sinks))

    received = world.receiver.keys()
    assert sorted(received) == sorted(key for keys in order.values() for key in keys)
    for attempt, keys in order.items():
        assert [key for key in received if key.startswith(f"attempt:{attempt}:")] == keys
