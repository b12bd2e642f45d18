"""One injected clock moves every deadline together (seed 004: "Advancing FakeTimeProvider fires the
start, call, and record budgets and the client's maximum call duration")."""

from __future__ import annotations

import asyncio

import pytest

from gateway.clock import ManualClock


async def test_advancing_past_a_budget_fires_it() -> None:
    clock = ManualClock()
    started = asyncio.Event()

    async def slow_call() -> None:
        async with clock.budget(15):
            started.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(slow_call())
    await started.wait()
    clock.advance(14.9)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(0.1)
    with pytest.raises(TimeoutError):
        await task


async def test_nested_budgets_fire_the_earlier_one_first() -> None:
    clock = ManualClock()
    fired: list[str] = []
    ready = asyncio.Event()

    async def call() -> None:
        try:
            async with clock.budget(30):
                try:
                    async with clock.budget(5):
                        ready.set()
                        await asyncio.Event().wait()
                except TimeoutError:
                    fired.append("inner")
                    await asyncio.Event().wait()
        except TimeoutError:
            fired.append("outer")

    task = asyncio.create_task(call())
    await ready.wait()
    clock.advance(5)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fired == ["inner"]
    clock.advance(25)
    await task
    assert fired == ["inner", "outer"]


async def test_a_budget_already_spent_fires_immediately() -> None:
    clock = ManualClock()
    with pytest.raises(TimeoutError):
        async with clock.budget(0):
            await asyncio.Event().wait()


async def test_a_finished_body_is_not_cancelled_later() -> None:
    clock = ManualClock()
    async with clock.budget(1):
        pass
    clock.advance(10)


async def test_sleep_wakes_when_the_clock_passes_it() -> None:
    clock = ManualClock()
    task = asyncio.create_task(clock.sleep(60))
    await asyncio.sleep(0)
    clock.advance(59)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(1)
    await asyncio.wait_for(task, 1)


def test_time_never_moves_backwards() -> None:
    with pytest.raises(ValueError, match="forward"):
        ManualClock().advance(-1)
