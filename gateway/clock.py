"""One clock for every deadline, lease and schedule (seed 004, "The Recovery Loop": one clock).

Code never calls ``datetime.now()`` or ``asyncio.timeout`` for a business deadline: it asks the
injected :class:`Clock`, and SQL receives the clock's ``now`` as the ``%(now)s`` parameter. A test
swaps in :class:`ManualClock` and moves every deadline together with :meth:`ManualClock.advance`,
which also fires the budgets (:meth:`Clock.budget`) that the advanced time has run out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """What every component asks for the time."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def budget(self, seconds: float | None) -> contextlib.AbstractAsyncContextManager[object]:
        """Cancel the body with ``TimeoutError`` once ``seconds`` have passed on this clock
        (None: no limit from this budget)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait until ``seconds`` have passed on this clock."""
        ...


class SystemClock:
    """The wall clock, for production."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def budget(self, seconds: float | None) -> contextlib.AbstractAsyncContextManager[object]:
        return asyncio.timeout(seconds)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to: the tests' FakeTimeProvider.

    Budgets opened on it fire when :meth:`advance` carries the clock past their deadline, so a
    test proves that a start, call or record budget cuts a call off without sleeping.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 29, 16, 0, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._budgets: dict[int, tuple[datetime, asyncio.Timeout, asyncio.AbstractEventLoop]] = {}
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        """Move time forward, firing every budget and sleep that the move runs out."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        self._now += timedelta(seconds=seconds)
        self._fire_due()
        return self._now

    def set(self, when: datetime) -> datetime:
        """Jump to ``when`` (not earlier than now)."""
        return self.advance((when - self._now).total_seconds())

    @contextlib.asynccontextmanager
    async def budget(self, seconds: float | None) -> AsyncIterator[None]:
        if seconds is None:
            yield
            return
        deadline = self._now + timedelta(seconds=seconds)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(None) as timeout:
            key = id(timeout)
            self._budgets[key] = (deadline, timeout, loop)
            try:
                self._fire_due()
                yield
            finally:
                self._budgets.pop(key, None)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self._now + timedelta(seconds=seconds), waiter)
        self._sleepers.append(entry)
        try:
            await waiter
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    def sleeping(self) -> list[datetime]:
        """When each pending :meth:`sleep` ends, earliest first (a test steps the clock to them)."""
        return sorted(deadline for deadline, waiter in self._sleepers if not waiter.done())

    def _fire_due(self) -> None:
        for key, (deadline, timeout, loop) in list(self._budgets.items()):
            if deadline <= self._now and timeout.when() is None:
                timeout.reschedule(loop.time())
                self._budgets.pop(key, None)
        for deadline, waiter in list(self._sleepers):
            if deadline <= self._now and not waiter.done():
                waiter.set_result(None)
