"""Reminders for open escalation episodes (seed 004, "Reminders"): one conditional claim per episode
and reminder, every reminder interval before acknowledgement and every acknowledged-reminder
interval after (rehearsal timings: 10 s and 30 s), none once resolved."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from gateway.escalations import operator
from gateway.escalations.reminders import claim_reminder, send_due_reminders
from gateway.escalations.store import resolve_for_attempt
from tests.integration.outbox_support import World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


async def remind(world: World) -> int:
    return await send_due_reminders(world.db, world.clock, world.settings)


async def alert_keys(world: World) -> list[str]:
    rows = await world.db.fetch_all("SELECT dedup_key FROM outbox_messages ORDER BY message_id")
    return [row["dedup_key"] for row in rows]


async def waiting_on_a_lock(world: World) -> None:
    """Return once some session of this database waits for a lock another holds."""
    for _ in range(1000):
        row = await world.db.fetch_one("SELECT count(*) AS n FROM pg_stat_activity"
                                       " WHERE wait_event_type = 'Lock' AND datname = current_database()")
        if row and row["n"]:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("nobody waited for the lock")


async def test_an_open_episode_reminds_from_next_reminder_at_before_acknowledgement(world: World) -> None:
    """Matrix: "an open episode sends reminders from next_reminder_at, starting before acknowledgement"."""
    episode = await world.escalate("attempt:a:deadline")
    world.clock.advance(9.9)
    assert await remind(world) == 0
    world.clock.advance(0.1)
    assert await remind(world) == 1
    assert await remind(world) == 0
    world.clock.advance(10)
    assert await remind(world) == 1
    assert await alert_keys(world) == [f"escalation:{episode}:initial", f"escalation:{episode}:reminder:1",
                                       f"escalation:{episode}:reminder:2"]
    row = await world.db.fetch_one("SELECT reminder_count, next_reminder_at FROM payment_escalations")
    assert row == {"reminder_count": 2, "next_reminder_at": world.clock.now() + timedelta(seconds=10)}


async def test_a_late_sweep_sends_one_reminder_not_a_burst(world: World) -> None:
    await world.escalate("attempt:b:deadline")
    world.clock.advance(3600)
    assert await remind(world) == 1
    assert await remind(world) == 0


async def test_two_racing_reminder_instances_send_one_reminder(world: World) -> None:
    """Matrix: "Two reminder job instances racing one episode send one reminder". Real concurrency:
    instance A has claimed (uncommitted) when instance B runs the same claim with the same read
    value; B waits on A's row lock and, once A commits, matches nothing."""
    episode = await world.escalate("attempt:c:deadline")
    world.clock.advance(10)
    read = world.clock.now()
    async with world.db.transaction() as conn_a:
        assert await claim_reminder(conn_a, episode, read, world.clock.now(), world.settings) == 1

        async def instance_b() -> int | None:
            async with world.db.transaction() as conn_b:
                return await claim_reminder(conn_b, episode, read, world.clock.now(), world.settings)

        racing = asyncio.create_task(instance_b())
        await waiting_on_a_lock(world)
        assert not racing.done()
    assert await asyncio.wait_for(racing, 10) is None
    assert await alert_keys(world) == [f"escalation:{episode}:initial", f"escalation:{episode}:reminder:1"]


async def test_two_whole_sweeps_racing_send_one_reminder_per_episode(world: World) -> None:
    episodes = [await world.escalate(f"attempt:{n}:deadline") for n in range(5)]
    world.clock.advance(10)
    sent = await asyncio.gather(remind(world), remind(world), remind(world))
    assert sum(sent) == len(episodes)
    assert sorted(await alert_keys(world)) == sorted(
        [f"escalation:{e}:initial" for e in episodes] + [f"escalation:{e}:reminder:1" for e in episodes])


async def test_acknowledgement_resets_the_schedule_and_an_acknowledged_episode_keeps_reminding(world: World) -> None:
    """Matrix: "acknowledgement resets the reminder schedule"; "an acknowledged but open episode sends
    reminders on its interval"."""
    episode = await world.escalate("attempt:d:deadline")
    world.clock.advance(5)
    await operator.acknowledge(world.db, world.clock, world.settings, episode)
    world.clock.advance(5)  # the unacknowledged schedule would be due now
    assert await remind(world) == 0
    world.clock.advance(25)
    assert await remind(world) == 1
    world.clock.advance(29)
    assert await remind(world) == 0
    world.clock.advance(1)
    assert await remind(world) == 1
    row = await world.db.fetch_one("SELECT reminder_count, resolved_at FROM payment_escalations")
    assert row == {"reminder_count": 2, "resolved_at": None}


async def test_a_sweep_that_read_before_an_acknowledgement_sends_nothing(world: World) -> None:
    episode = await world.escalate("attempt:e:deadline")
    world.clock.advance(10)
    read = world.clock.now()
    await operator.acknowledge(world.db, world.clock, world.settings, episode)
    async with world.db.transaction() as conn:
        assert await claim_reminder(conn, episode, read, world.clock.now(), world.settings) is None


async def test_resolving_clears_reminders(world: World) -> None:
    """Matrix: "Resolving an attempt resolves its open escalations, so no reminder follows"; an
    operator's resolution clears them the same way."""
    attempt = await world.attempt()
    by_attempt = await world.escalate(f"attempt:{attempt}:deadline", attempt)
    by_operator = await world.escalate("notification:cardco:acct_store:test:evt_9:unmatched")
    async with world.db.transaction() as conn:
        await resolve_for_attempt(conn, attempt, world.clock.now(), "attempt succeeded")
    resolved = await world.db.fetch_one("SELECT resolved_at FROM payment_escalations WHERE escalation_id = %(id)s",
                                        {"id": by_attempt})
    assert resolved == {"resolved_at": world.clock.now()}
    await operator.resolve(world.db, world.clock, by_operator, note="matched by hand")
    world.clock.advance(86_400)
    assert await remind(world) == 0
    rows = await world.db.fetch_all("SELECT next_reminder_at FROM payment_escalations")
    assert rows == [{"next_reminder_at": None}, {"next_reminder_at": None}]
