"""Group commit over real PostgreSQL (gateway/store/group_commit.py, docs/decisions/0073; seed 000:
acknowledge only after commit). Each row records its top-level transaction's id (txid_current(),
the same in every savepoint): that is how a test sees which units shared a transaction. A lane is
held busy with an event, never with a sleep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest

from gateway.store.db import Connection, Database
from gateway.store.group_commit import GroupCommit


class Poisoned(Exception):
    pass


BUSY: asyncio.Event  # set by unit 0 once its lane is inside its transaction (one per test, in its loop)


@pytest.fixture
async def probe(db: Database) -> AsyncIterator[Database]:
    """A scratch table; its unique constraint is checked at COMMIT, so a batch can fail there."""
    async with db.connection() as conn:
        await conn.execute("CREATE TABLE gc_probe (n int NOT NULL, tx bigint NOT NULL DEFAULT txid_current(),"
                           " CONSTRAINT gc_probe_n UNIQUE (n) DEFERRABLE INITIALLY DEFERRED)")
    yield db


async def _rows(db: Database) -> dict[int, str]:
    """n -> the top-level transaction that inserted each row."""
    return {row["n"]: row["tx"] for row in await db.fetch_all("SELECT n, tx FROM gc_probe")}


def _inserting(gate: asyncio.Event | None = None, poison: Callable[[int], bool] = lambda n: False,
               key: Callable[[int], int] = lambda n: n) -> Callable[[Connection, int], Awaitable[int]]:
    """Work that inserts its unit's row; unit 0 first waits for ``gate`` (holding its lane busy);
    a poisoned unit raises after its insert, which its savepoint must undo."""
    async def work(conn: Connection, n: int) -> int:
        await conn.execute("INSERT INTO gc_probe (n) VALUES (%(n)s)", {"n": key(n)})
        if n == 0 and gate is not None:
            BUSY.set()
            await gate.wait()
        if poison(n):
            raise Poisoned(n)
        return n
    return work


async def _hold_first_lane(group: GroupCommit[int, int], units: range = range(1)) -> list[asyncio.Task[int]]:
    """``units`` arrive in one loop turn while every lane is free: the first lane takes them all
    as one batch, held busy by unit 0 (the lanes they opened beside it find nothing to take)."""
    global BUSY
    BUSY = asyncio.Event()
    held = [asyncio.create_task(group.run(n)) for n in units]
    await BUSY.wait()
    return held


async def _batch_behind_a_busy_lane(group: GroupCommit[int, int], gate: asyncio.Event,
                                    units: range) -> list[Any]:
    """Unit 0 occupies the only lane; ``units`` queue behind it, then the lane is freed."""
    [first] = await _hold_first_lane(group)  # unit 0's lane is inside its transaction
    rest = [asyncio.create_task(group.run(n)) for n in units]
    await asyncio.sleep(0)
    gate.set()
    return list(await asyncio.gather(first, *rest, return_exceptions=True))


async def test_a_lone_unit_is_committed_alone_at_once_and_answered_after_its_commit(probe: Database) -> None:
    """Low load: nothing in flight, so each unit starts its own transaction (no waiting for company)."""
    group = GroupCommit(probe, _inserting(), max_batch=16, lanes=1, lock_wait_ms=100)
    for n in range(3):
        assert await group.run(n) == n
        assert n in await _rows(probe)  # committed by the time run() returned
    assert len(set((await _rows(probe)).values())) == 3


async def test_units_queued_behind_a_busy_lane_share_one_transaction(probe: Database) -> None:
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=1, lock_wait_ms=100)
    assert await _batch_behind_a_busy_lane(group, gate, range(1, 6)) == [0, 1, 2, 3, 4, 5]
    rows = await _rows(probe)
    assert len({rows[n] for n in range(1, 6)}) == 1 and rows[0] != rows[1]


async def _arrive_one_by_one(group: GroupCommit[int, int], units: range) -> list[asyncio.Task[int]]:
    """Each unit's run() started, with loop turns between them: a lane a unit opens takes its
    batch before the next unit arrives."""
    tasks = []
    for n in units:
        tasks.append(asyncio.create_task(group.run(n)))
        for _ in range(3):
            await asyncio.sleep(0)
    return tasks


async def test_a_unit_that_finds_every_lane_free_starts_at_once_whatever_the_backlog(probe: Database) -> None:
    """docs/decisions/0082: the window never adds latency at low load (one sender's does not grow): a
    backlog of 4 never makes a lone delivery wait for company."""
    group = GroupCommit(probe, _inserting(), max_batch=16, lanes=2, lock_wait_ms=100, backlog=4)
    for n in range(3):
        assert await asyncio.wait_for(group.run(n), 30) == n
        assert n in await _rows(probe)


async def test_with_few_in_flight_a_free_lane_takes_a_unit_at_once(probe: Database) -> None:
    """docs/decisions/0082: unit 0 holds one lane; unit 1 makes two in flight, no more than the
    backlog of 4, so there is no batch worth waiting for and the second lane commits it at once."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=2, lock_wait_ms=100, backlog=4)
    [first] = await _hold_first_lane(group)
    assert await asyncio.wait_for(group.run(1), 30) == 1
    assert not first.done()
    gate.set()
    assert await first == 0


async def test_with_many_in_flight_a_second_lane_opens_only_for_a_backlog(probe: Database) -> None:
    """docs/decisions/0082: a batch of three holds the first lane, more in flight than the backlog
    of 2: unit 3 waits beside the free lane, unit 4 makes the backlog, and the second lane commits
    both together while the batch is still held (a lane opened for each arrival would have
    committed unit 3 alone)."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=2, lock_wait_ms=100, backlog=2)
    held = await _hold_first_lane(group, range(3))
    waiting = await _arrive_one_by_one(group, range(3, 5))
    assert await asyncio.wait_for(asyncio.gather(*waiting), 30) == [3, 4]
    assert not any(task.done() for task in held)
    gate.set()
    assert await asyncio.gather(*held) == [0, 1, 2]
    rows = await _rows(probe)
    assert rows[0] == rows[1] == rows[2] != rows[3] == rows[4]


async def test_units_short_of_the_backlog_go_with_the_busy_lane_when_it_frees(probe: Database) -> None:
    """docs/decisions/0082: a batch of four holds the first lane; units 4 and 5, short of the
    backlog of 3, leave the second lane closed; the first, once free, takes both into one
    transaction."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=2, lock_wait_ms=100, backlog=3)
    held = await _hold_first_lane(group, range(4))
    waiting = await _arrive_one_by_one(group, range(4, 6))
    assert sorted(await _rows(probe)) == [] and not any(task.done() for task in waiting)
    gate.set()
    assert await asyncio.gather(*held, *waiting) == [0, 1, 2, 3, 4, 5]
    rows = await _rows(probe)
    assert rows[0] == rows[3] != rows[4] == rows[5]


async def test_a_batch_once_answered_leaves_nothing_in_flight_so_a_lone_unit_starts_at_once(
        probe: Database) -> None:
    """docs/decisions/0082: after a held batch of four has committed nothing is in flight, so lone
    units with a backlog of 2 start at once (a lane that kept counting its answered units would
    make them wait for a backlog that never comes)."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=2, lock_wait_ms=100, backlog=2)
    held = await _hold_first_lane(group, range(4))
    gate.set()
    assert await asyncio.gather(*held) == [0, 1, 2, 3]
    for n in (4, 5):
        assert await asyncio.wait_for(group.run(n), 30) == n


async def test_with_a_backlog_of_one_any_waiting_unit_opens_a_free_lane(probe: Database) -> None:
    """``backlog`` 1 is docs/decisions/0073's rule: beside a held batch of three, unit 3 takes the
    second lane at once, alone."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=2, lock_wait_ms=100, backlog=1)
    held = await _hold_first_lane(group, range(3))
    assert await asyncio.wait_for(group.run(3), 30) == 3
    gate.set()
    assert await asyncio.gather(*held) == [0, 1, 2]
    rows = await _rows(probe)
    assert rows[0] == rows[2] != rows[3]


async def test_a_batch_takes_at_most_max_batch_units(probe: Database) -> None:
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=2, lanes=1, lock_wait_ms=100)
    assert await _batch_behind_a_busy_lane(group, gate, range(1, 6)) == [0, 1, 2, 3, 4, 5]
    rows = await _rows(probe)
    assert [rows[1] == rows[2], rows[3] == rows[4], rows[2] != rows[3], rows[4] != rows[5]] == [True] * 4


async def test_a_poisoned_unit_never_fails_the_others_and_is_done_alone(probe: Database) -> None:
    """It is rolled back to its savepoint (its insert undone), the others commit together, and it
    runs again alone: still failing, it alone gets the error."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate, poison=lambda n: n == 3), max_batch=16, lanes=1, lock_wait_ms=100)
    results = await _batch_behind_a_busy_lane(group, gate, range(1, 6))
    assert results[:3] == [0, 1, 2] and results[4:] == [4, 5]
    assert isinstance(results[3], Poisoned)
    rows = await _rows(probe)
    assert sorted(rows) == [0, 1, 2, 4, 5]
    assert len({rows[n] for n in (1, 2, 4, 5)}) == 1


async def test_a_unit_that_fails_only_in_the_batch_succeeds_alone_in_its_own_transaction(probe: Database) -> None:
    gate = asyncio.Event()
    tries: dict[int, int] = {}

    def once(n: int) -> bool:
        tries[n] = tries.get(n, 0) + 1
        return n == 2 and tries[n] == 1

    group = GroupCommit(probe, _inserting(gate, poison=once), max_batch=16, lanes=1, lock_wait_ms=100)
    assert await _batch_behind_a_busy_lane(group, gate, range(1, 4)) == [0, 1, 2, 3]
    rows = await _rows(probe)
    assert rows[1] == rows[3] != rows[2]
    assert tries[2] == 2


async def test_when_the_batch_transaction_fails_at_commit_nobody_is_answered_success(probe: Database) -> None:
    """Units 1 and 2 insert the same n; the deferred constraint fails the batch's COMMIT: every
    unit of the batch gets the error and none of its rows exists (unit 0, alone before, stays)."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate, key=lambda n: 7 if n in (1, 2) else n), max_batch=16, lanes=1,
                        lock_wait_ms=100)
    results = await _batch_behind_a_busy_lane(group, gate, range(1, 5))
    assert results[0] == 0
    assert all(isinstance(r, psycopg.errors.UniqueViolation) for r in results[1:]), results
    assert sorted(await _rows(probe)) == [0]


async def test_a_pipelined_batch_failing_at_commit_answers_each_unit_only_from_its_own_commit(
        probe: Database) -> None:
    """Pipelined (docs/decisions/0080): units 1 and 2 insert the same n, so the deferred constraint
    fails the batch's COMMIT after its work returned. Nobody is answered from the batch: each unit
    is done again alone, unit 1's row commits, unit 2's own COMMIT fails and is its answer."""
    gate = asyncio.Event()
    key = lambda n: 7 if n in (1, 2) else n  # noqa: E731
    work = _inserting(gate, key=key)

    async def batch(conn: Connection, units: list[int]) -> list[int | None]:
        for n in units:
            await conn.execute("INSERT INTO gc_probe (n) VALUES (%(n)s)", {"n": key(n)})
        return list(units)

    group = GroupCommit(probe, work, max_batch=16, lanes=1, lock_wait_ms=100, batch=batch)
    results = await _batch_behind_a_busy_lane(group, gate, range(1, 5))
    assert results[:2] == [0, 1] and results[3:] == [3, 4]
    assert isinstance(results[2], psycopg.errors.UniqueViolation), results
    rows = await _rows(probe)
    assert sorted(rows) == [0, 3, 4, 7] and len({rows[3], rows[4], rows[7]}) == 3  # each alone


async def test_when_the_batch_connection_dies_nobody_is_answered_success(probe: Database) -> None:
    """The server ends the batch's session mid-transaction (a crash, as its client sees it)."""
    gate = asyncio.Event()

    async def work(conn: Connection, n: int) -> int:
        await conn.execute("INSERT INTO gc_probe (n) VALUES (%(n)s)", {"n": n})
        if n == 0:
            BUSY.set()
            await gate.wait()
        if n == 3:
            await probe.fetch_one("SELECT pg_terminate_backend(%(pid)s)", {"pid": conn.info.backend_pid})
        return n

    group = GroupCommit(probe, work, max_batch=16, lanes=1, lock_wait_ms=100)
    results = await _batch_behind_a_busy_lane(group, gate, range(1, 5))
    assert results[0] == 0
    assert all(isinstance(r, psycopg.Error) for r in results[1:]), results
    assert sorted(await _rows(probe)) == [0]


async def test_a_unit_that_would_wait_for_a_lock_in_a_batch_waits_alone_after_it(probe: Database,
                                                                              database_url: str) -> None:
    """Another session holds a row lock unit 2 needs: in the batch it gives up after lock_wait_ms
    (the others commit without waiting for it), then alone it waits until the lock is released."""
    await probe.fetch_one("INSERT INTO gc_probe (n) VALUES (100) RETURNING n")
    gate = asyncio.Event()

    async def work(conn: Connection, n: int) -> int:
        if n == 2:
            await conn.execute("SELECT n FROM gc_probe WHERE n = 100 FOR UPDATE")
        await conn.execute("INSERT INTO gc_probe (n) VALUES (%(n)s)", {"n": n})
        if n == 0:
            BUSY.set()
            await gate.wait()
        return n

    group = GroupCommit(probe, work, max_batch=16, lanes=1, lock_wait_ms=50)
    async with await psycopg.AsyncConnection.connect(database_url) as holder:
        await holder.execute("SELECT n FROM gc_probe WHERE n = 100 FOR UPDATE")
        [first] = await _hold_first_lane(group)
        rest = [asyncio.create_task(group.run(n)) for n in (1, 2, 3)]
        await asyncio.sleep(0)
        gate.set()
        assert await asyncio.gather(first, rest[0], rest[2]) == [0, 1, 3]
        assert not rest[1].done()  # alone now, waiting for the holder
        rows = await _rows(probe)
        assert 2 not in rows and rows[1] == rows[3]
        await holder.rollback()
    assert await rest[1] == 2
    assert 2 in await _rows(probe)


async def test_a_caller_that_goes_away_neither_cancels_the_shared_transaction_nor_its_own_unit(
        probe: Database) -> None:
    """A queued unit whose caller is cancelled (a client that hung up) is still done with the
    others: the batch was accepted work, and the others are answered as usual."""
    gate = asyncio.Event()
    group = GroupCommit(probe, _inserting(gate), max_batch=16, lanes=1, lock_wait_ms=100)
    [first] = await _hold_first_lane(group)
    rest = [asyncio.create_task(group.run(n)) for n in (1, 2, 3)]
    await asyncio.sleep(0)
    rest[1].cancel()
    gate.set()
    results = await asyncio.gather(first, *rest, return_exceptions=True)
    assert results[:2] == [0, 1] and results[3] == 3 and isinstance(results[2], asyncio.CancelledError)
    rows = await _rows(probe)
    assert sorted(rows) == [0, 1, 2, 3] and rows[1] == rows[2] == rows[3]
