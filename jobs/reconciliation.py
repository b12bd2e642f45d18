"""The provider-side reconciliation worker (docs/decisions/0071): woken by the clock on every tick,
it starts the runs the schedule makes due (one per account every ``reconciliation_interval_s``)
and continues every Running run, an operator's or the clock's, for a bounded number of pages, so a
run never executes in a web request, and a run a worker lost half-way (killed, out of tokens,
paused by a 429) is continued by the next wake-up from the position it committed."""

from __future__ import annotations

import dramatiq

from gateway.reconciliation.runs import Runs
from jobs import runtime
from jobs.broker import QUEUE

PAGES_PER_WAKE = 50  # per run: a wake-up ends well inside the actor's time limit


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=300_000)
async def reconcile_providers() -> None:
    current = await runtime.current()
    runs = Runs(current.db, current.clock, current.settings, current.http)
    await runs.schedule()
    await runs.continue_running(PAGES_PER_WAKE)
