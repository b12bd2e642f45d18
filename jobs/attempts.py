"""Publishing and running the job of any attempt kind (seed 000, "The Queue Message Is Transport"):
a job outbox row becomes its actor's message, references only, delayed until ``deliver_at``; the
actor runs the pipeline's executor for its kind, and a postponed delivery (early, or context
unavailable) is re-sent for later while its grant's window is open."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.pipeline.executor import Executor
from gateway.pipeline.kind import AttemptKind, Job, Postponed, Presenter
from jobs import runtime

POSTPONE_S = 15.0


def _delay_ms(until: datetime, clock: Clock) -> int:
    return max(0, int((until - clock.now()).total_seconds() * 1000))


def publish(actor: dramatiq.Actor[Any, Any], payload: dict[str, Any], clock: Clock,
            parent: str) -> dramatiq.Message[Any]:
    """One job outbox row as ``actor``'s message: (``payload[parent]``, grant id, correlation id)."""
    return actor.send_with_options(args=(payload[parent], payload["grant_id"], payload["correlation_id"]),
                                   delay=_delay_ms(datetime.fromisoformat(payload["deliver_at"]), clock))


async def execute(actor: dramatiq.Actor[Any, Any], kind: AttemptKind, presenter: Presenter, job: Job) -> None:
    """Run one delivery of ``kind``'s job; a postponed one is re-sent to ``actor`` for later."""
    current = await runtime.current()
    outcome = await Executor(kind, current.db, current.clock, current.settings, presenter, current.http).run(job)
    if isinstance(outcome, Postponed):
        later = outcome.until or current.clock.now() + timedelta(seconds=POSTPONE_S)
        actor.send_with_options(args=tuple(job.ids().values()), delay=_delay_ms(later, current.clock))
