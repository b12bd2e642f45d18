"""Group commit: units of work that arrive while others are being committed share one transaction
(docs/decisions/0073).

:meth:`GroupCommit.run` resolves only after the transaction that did the unit has COMMITTED, with
what the unit returned (seed 000: acknowledge only after commit), or raises what stopped it. There
is no timer: a unit that finds every lane free starts its transaction at once, alone, exactly as it
would without grouping (a lone caller never waits). A unit that arrives while a lane is busy
queues, and a free lane takes it at once while few units are in flight (:func:`opens_lane`); with
more in flight than ``backlog``, a further lane opens only for a queue of ``backlog`` units
(docs/decisions/0082: a second lane opened for every unit that arrives runs batches of one or two
beside the busy one, each paying a transaction's fixed cost). The next lane to free takes up to
``max_batch`` queued units into one transaction, each in its own savepoint, synced at its end so
that an error of its writes is its own. A unit that fails in its
savepoint (or would wait for a lock longer than ``lock_wait_ms``) is rolled back to it, never
failing the others, and is done again alone in its own transaction after the batch commits: that
run's result or error is its answer. If the batch transaction itself fails (its COMMIT, the
connection), every unit in it gets that error: nobody is told a unit committed that did not.

With a ``batch`` function the units go together without savepoints, pipelined: the function sends
every unit's statements before it reads any result (docs/decisions/0080). Then any error fails the
whole batch, and every unit in it is done again alone; units the function leaves out (None) are
done alone after the batch commits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from gateway.store.db import Connection, Database, savepoint, settle
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "group_commit.sql")
T = TypeVar("T")
R = TypeVar("R")
Work = Callable[[Connection, T], Awaitable[R]]
# A pipelined batch: the units' work done together in the caller's transaction, their statements
# sent before any result is read; None for a unit it leaves to be done alone after the commit.
Batch = Callable[[Connection, list[T]], Awaitable[list[R | None]]]


class GroupCommit(Generic[T, R]):
    """``work(conn, unit)`` for each unit, grouped as the module says, over ``lanes`` transactions
    at most at once, ``max_batch`` units per transaction at most (1: every unit alone), a lane
    beside a busy one opened as :func:`opens_lane` says (``backlog`` 1: for any queued unit)."""

    def __init__(self, db: Database, work: Work[T, R], *, max_batch: int, lanes: int, lock_wait_ms: int,
                 batch: Batch[T, R] | None = None, backlog: int = 1) -> None:
        if max_batch < 1 or lanes < 1 or lock_wait_ms < 1 or backlog < 1:
            raise ValueError("max_batch, lanes, lock_wait_ms and backlog must be >= 1")
        self._db = db
        self._work = work
        self._batch = batch
        self._max_batch = max_batch
        self._backlog = backlog
        self._free = lanes
        self._in_lanes = 0  # units taken by a lane and not yet answered
        self._lock_wait = f"{lock_wait_ms}ms"
        self._pending: deque[tuple[T, asyncio.Future[R]]] = deque()
        self._lanes: set[asyncio.Task[None]] = set()

    async def run(self, unit: T) -> R:
        """``work``'s result for ``unit`` once its transaction has committed."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieved)  # a caller gone before its answer leaves no unread error
        self._pending.append((unit, future))
        if opens_lane(free=self._free, queued=len(self._pending), in_lanes=self._in_lanes, backlog=self._backlog):
            self._free -= 1
            lane = asyncio.create_task(self._lane())
            self._lanes.add(lane)
            lane.add_done_callback(self._lanes.discard)
        return await asyncio.shield(future)  # a caller that goes away does not cancel the others' batch

    async def _lane(self) -> None:
        try:
            while self._pending:
                batch = [self._pending.popleft() for _ in range(min(len(self._pending), self._max_batch))]
                self._in_lanes += len(batch)
                try:
                    if len(batch) == 1:
                        await self._alone(*batch[0])
                    elif self._batch is not None:
                        await self._pipelined(batch, self._batch)
                    else:
                        await self._together(batch)
                except BaseException as error:  # cancelled (shut down): nobody waits for ever
                    for _, future in batch:
                        _settle(future, error=error)
                    raise
                finally:
                    self._in_lanes -= len(batch)
        finally:
            self._free += 1

    async def _alone(self, unit: T, future: asyncio.Future[R]) -> None:
        try:
            async with self._db.transaction() as conn:
                result = await self._work(conn, unit)
        except Exception as error:
            _settle(future, error=error)
        else:
            _settle(future, result)

    async def _together(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        done: list[tuple[asyncio.Future[R], R]] = []
        isolated: list[tuple[T, asyncio.Future[R]]] = []
        try:
            async with self._db.transaction() as conn:
                await conn.execute(_SQL["batch_lock_timeout"], {"timeout": self._lock_wait})
                for index, (unit, future) in enumerate(batch):
                    try:
                        async with savepoint(conn, f"unit_{index}"):
                            result = await self._work(conn, unit)
                            # Its queued writes run now: an error they meet is this unit's, rolled
                            # back to its own savepoint, never surfacing in the next unit's.
                            await settle(conn)
                        done.append((future, result))
                    except Exception:
                        isolated.append((unit, future))
        except Exception as error:
            for _, future in batch:
                _settle(future, error=error)
            return
        for future, result in done:
            _settle(future, result)
        for unit, future in isolated:
            await self._alone(unit, future)

    async def _pipelined(self, batch: list[tuple[T, asyncio.Future[R]]], work: Batch[T, R]) -> None:
        """The batch as ``work`` does it, in one transaction. Any error (a statement's, a lock
        waited for longer than ``lock_wait_ms``, the COMMIT's, the connection's) rolls all of it
        back, or leaves its outcome unknown: then every unit is done again alone, so ``work`` must
        batch only units whose second doing finds what the first committed (a notification's
        recording by its key); nobody is answered before the commit that did their unit."""
        try:
            async with self._db.transaction() as conn:
                await conn.execute(_SQL["batch_lock_timeout"], {"timeout": self._lock_wait})
                results = await work(conn, [unit for unit, _ in batch])
        except Exception:
            for unit, future in batch:
                await self._alone(unit, future)
            return
        for (unit, future), result in zip(batch, results, strict=True):
            if result is None:
                await self._alone(unit, future)
            else:
                _settle(future, result)


def opens_lane(*, free: int, queued: int, in_lanes: int, backlog: int) -> bool:
    """Whether the unit just queued (``queued`` waiting, itself included; ``in_lanes`` taken by busy
    lanes) opens one of the ``free`` lanes (docs/decisions/0082). While no more than ``backlog``
    units are in flight there is no batch worth waiting for: a free lane takes it at once, as it
    always does a lone unit's (every lane free). With more in flight, a lane beside a busy one opens
    only once ``backlog`` units wait, and until then they wait for the first lane to free."""
    return free > 0 and (queued + in_lanes <= backlog or queued >= backlog)


def _settle(future: asyncio.Future[R], result: R | None = None, *, error: BaseException | None = None) -> None:
    if future.done():
        return
    if isinstance(error, asyncio.CancelledError):
        future.cancel()
    elif error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]


def _retrieved(future: asyncio.Future[R]) -> None:
    if not future.cancelled():
        future.exception()
