"""Stepping the injected clock through a task's own waits (a resend's backoff): the test moves the
ManualClock to each wake-up the task asked for, never sleeping for a deadline itself."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from gateway.clock import ManualClock

REAL_WAIT_S = 10.0  # how long the task may take, in real time, to reach its next wait or its end


async def next_wake(clock: ManualClock, task: asyncio.Task[Any]) -> datetime | None:
    """When the wait ``task`` is in on ``clock`` ends, once it waits; None when it finished instead."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + REAL_WAIT_S
    while loop.time() < give_up:
        if task.done():
            return None
        if waits := clock.sleeping():
            return waits[0]
        await asyncio.sleep(0.005)
    raise AssertionError("the task neither waited on the clock nor finished")
