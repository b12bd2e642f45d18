"""Publishing and running the job of any attempt kind (seed 000, "The Queue Message Is Transport"):
a job outbox row becomes its actor's message, references only, delayed until ``deliver_at``; the
actor runs the pipeline's executor for its kind. A postponed delivery (early, or context
unavailable) ends there: its grant stays Issued, and the redelivery sweep publishes the job again
while the grant is due (jobs/redelivery.py; docs/decisions/0022), so no chain of re-sent messages
lives only in the broker."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.pipeline.executor import Executor
from gateway.pipeline.kind import AttemptKind, Job, Presenter
from jobs import runtime


def _delay_ms(until: datetime, clock: Clock) -> int:
    return max(0, int((until - clock.now()).total_seconds() * 1000))


def publish(actor: dramatiq.Actor[Any, Any], payload: dict[str, Any], clock: Clock,
            parent: str) -> dramatiq.Message[Any]:
    """One job outbox row as ``actor``'s message: (``payload[parent]``, grant id, correlation id)."""
    return actor.send_with_options(args=(payload[parent], payload["grant_id"], payload["correlation_id"]),
                                   delay=_delay_ms(datetime.fromisoformat(payload["deliver_at"]), clock))


async def execute(kind: AttemptKind, presenter: Presenter, job: Job) -> None:
    """Run one delivery of ``kind``'s job."""
    current = await runtime.current()
    await Executor(kind, current.db, current.clock, current.settings, presenter, current.http).run(job)
