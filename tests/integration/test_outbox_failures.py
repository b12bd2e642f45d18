"""Failed deliveries (seed 004, "Downstream Work": "The dispatcher counts attempts, records the last
error, backs off using next_attempt_at, and dead-letters a row after a bounded number of failures";
"dead-lettering raises an escalation, whose alert is delivered regardless")."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from pydantic import SecretStr

from gateway.outbox.dispatcher import dispatch_batch
from tests.integration.outbox_support import ALERT_PATH, World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


async def test_an_undeliverable_row_is_dead_lettered_and_escalated_without_delaying_others(world: World) -> None:
    """Matrix: "An outbox row that can never be delivered is dead-lettered after its retry limit and
    escalated, and does not delay other attempts' rows." Rehearsal policy: 1, 2, 4, 8 s, then dead."""
    stuck = await world.attempt()
    confirmation = await world.effect(stuck, "order-confirmation")
    world.receiver.failing[f"attempt:{stuck}:order-confirmation"] = 500
    started = world.clock.now()

    delays = []
    for step in range(5):
        other = await world.attempt()
        await world.effect(other, "order-confirmation")
        await world.dispatch()
        assert world.receiver.keys()[-1] == f"attempt:{other}:order-confirmation", f"step {step}"
        row = await world.message(confirmation)
        assert row["delivery_attempts"] == step + 1
        if row["dead_lettered_at"] is None:
            delays.append((row["next_attempt_at"] - world.clock.now()).total_seconds())
            world.clock.set(row["next_attempt_at"])
    assert delays == [1, 2, 4, 8]

    row = await world.message(confirmation)
    assert row["dead_lettered_at"] == started + timedelta(seconds=15)
    assert row["last_error"] == "sink answered HTTP 500"
    escalation = await world.db.fetch_one("SELECT * FROM payment_escalations")
    assert escalation is not None
    assert (escalation["escalation_key"], escalation["reason"], escalation["attempt_id"]) == (
        f"outbox:{confirmation}:dead-lettered", "outbox-dead-lettered", stuck)
    assert escalation["details"]["dedup_key"] == f"attempt:{stuck}:order-confirmation"
    assert world.receiver.keys("alerts") == [f"escalation:{escalation['escalation_id']}:initial"]

    world.clock.advance(3600)
    await world.dispatch()
    assert (await world.message(confirmation))["delivery_attempts"] == 5  # dead rows are never claimed


async def test_a_dead_lettered_confirmation_keeps_blocking_its_refund(world: World) -> None:
    """Matrix: "a dead-lettered confirmation keeps blocking until an operator resolves it" (the
    operator's retry and discard are in test_ops_outbox.py). Resolving the escalation alone is not
    such a decision: the row stays dead and keeps blocking."""
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    refund = await world.effect(attempt, "refund")
    await world.fail_until_dead(f"attempt:{attempt}:order-confirmation")
    assert (await world.message(confirmation))["dead_lettered_at"] is not None
    async with world.db.transaction() as conn:
        await conn.execute("UPDATE payment_escalations SET resolved_at = %(now)s, next_reminder_at = NULL",
                           {"now": world.clock.now()})

    world.clock.advance(86_400)
    await world.dispatch()
    assert (await world.message(refund))["dispatched_at"] is None
    assert world.receiver.keys() == []


async def test_business_effects_are_signed_standard_webhooks_keyed_by_their_dedup_key(world: World) -> None:
    """API.md "Shapes" body; Standard Webhooks v1 headers (NOTES.md): the signature checks out with
    the reference library, and webhook-id is the dedup key, stable across redeliveries."""
    from standardwebhooks.webhooks import Webhook

    attempt = await world.attempt()
    await world.effect(attempt, "order-confirmation")
    await world.dispatch()

    [message] = world.receiver.received
    headers, key = message["headers"], f"attempt:{attempt}:order-confirmation"
    assert headers["webhook-id"] == key
    assert headers["webhook-timestamp"] == str(int(world.clock.now().timestamp()))
    expected = Webhook(world.settings.merchant_signing_secret.get_secret_value()).sign(  # type: ignore[union-attr]
        key, world.clock.now(), message["raw"].decode())
    assert headers["webhook-signature"] == expected
    assert message["body"] == {"kind": "order-confirmation", "dedup_key": key, "attempt_id": str(attempt),
                               "escalation_id": None,
                               "payload": {"attempt_id": str(attempt), "dedup_key": key, "kind": "order-confirmation"}}


async def test_a_missing_sink_is_a_failure_with_a_clear_error_never_a_silent_drop(world: World) -> None:
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    escalation_id = await world.escalate("attempt:x:deadline", attempt)
    world.settings = world.settings.model_copy(update={"merchant_sink_url": None, "alert_sink_url": None})
    await world.dispatch()
    alert = await world.db.fetch_one("SELECT * FROM outbox_messages WHERE dedup_key = %(k)s",
                                     {"k": f"escalation:{escalation_id}:initial"})
    assert alert is not None
    assert (alert["last_error"], alert["delivery_attempts"]) == ("alert_sink_url is not configured", 1)
    assert (await world.message(confirmation))["last_error"] == "merchant_sink_url is not configured"

    world.settings = world.settings.model_copy(update={"merchant_sink_url": "http://sinks.test/merchant",
                                                       "merchant_signing_secret": SecretStr("not-whsec")})
    world.clock.advance(2)
    await world.dispatch()
    assert (await world.message(confirmation))["last_error"] == \
        "merchant_signing_secret is not configured as a whsec_ secret"
    assert world.receiver.received == []


async def test_last_error_never_carries_the_sink_url_or_the_receivers_body(world: World) -> None:
    escalation_id = await world.escalate("attempt:y:deadline")
    world.receiver.failing[f"escalation:{escalation_id}:initial"] = 502
    await world.dispatch()
    row = await world.db.fetch_one("SELECT last_error FROM outbox_messages")
    assert row == {"last_error": "sink answered HTTP 502"}
    assert ALERT_PATH not in str(row) and "stack trace" not in str(row)


async def test_a_dead_lettered_operator_alert_raises_no_escalation_of_its_own(world: World) -> None:
    """An undeliverable alert would only alert into the same failing sink, and so on without end."""
    escalation_id = await world.escalate("attempt:z:deadline")
    world.receiver.failing[f"escalation:{escalation_id}:initial"] = 500
    for _ in range(5):
        await world.dispatch()
        world.clock.advance(8)
    rows = await world.db.fetch_all("SELECT dedup_key, dead_lettered_at IS NOT NULL AS dead FROM outbox_messages")
    assert rows == [{"dedup_key": f"escalation:{escalation_id}:initial", "dead": True}]
    assert len(await world.db.fetch_all("SELECT 1 FROM payment_escalations")) == 1


async def test_a_crash_after_the_escalation_commits_still_alerts_a_person_from_the_outbox(world: World) -> None:
    """Matrix: "A crash after an escalation commits but before the alert is sent still alerts a person,
    from the outbox." The dispatcher dies mid-delivery (its task is cancelled while it holds the
    claim): the claim rolls back, nothing is counted, and the next dispatcher delivers the alert."""
    attempt = await world.attempt()
    escalation_id = await world.escalate(f"attempt:{attempt}:deadline", attempt)
    key = f"escalation:{escalation_id}:initial"
    _release, arrived = world.receiver.hold(key)

    crashed = asyncio.create_task(dispatch_batch(world.db, world.clock, world.settings, world.sinks))
    await asyncio.wait_for(arrived.wait(), 10)
    crashed.cancel()
    await asyncio.gather(crashed, return_exceptions=True)
    row = await world.db.fetch_one("SELECT delivery_attempts, dispatched_at FROM outbox_messages")
    assert row == {"delivery_attempts": 0, "dispatched_at": None}

    del world.receiver.held[key], world.receiver.arrived[key]
    await world.dispatch()
    assert world.receiver.keys("alerts") == [key]
    assert world.receiver.received[0]["body"]["escalation_id"] == escalation_id
