"""Publishing and running the job of any attempt kind (seed 000, "The Queue Message Is Transport"):
a job outbox row becomes its actor's message, references only, delayed until ``deliver_at``; the
actor runs the pipeline's executor for its kind. A postponed delivery (early, or context
unavailable) ends there: its grant stays Issued, and the redelivery sweep publishes the job again
while the grant is due (jobs/redelivery.py; docs/decisions/0022), so no chain of re-sent messages
lives only in the broker.

Each kind's job module registers its publisher and its source of due jobs once, with
:func:`job_of`; the outbox's publishers and the redelivery sweep's sources are derived from the
registered kinds (gateway.domain.attempt_kinds), so a kind without either fails at import."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.domain.attempt_kinds import Kind, pipeline_kinds
from gateway.outbox.delivery import Publisher
from gateway.pipeline.executor import Executor
from gateway.pipeline.kind import AttemptKind, Job, Presenter
from gateway.redelivery.republish import DueJobs
from jobs import runtime

_PUBLISHERS: dict[str, Publisher] = {}
_DUE: dict[str, DueJobs] = {}


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


def job_of(kind: Kind, due: DueJobs) -> Callable[[Publisher], Publisher]:
    """Register the decorated function as what publishes ``kind``'s job rows, and ``due`` as where
    the redelivery sweep finds its jobs due and untaken (docs/decisions/0022)."""
    if due.kind != kind.job:
        raise ValueError(f"{kind.name}'s due jobs are {due.kind} rows, not {kind.job}")

    def register(publisher: Publisher) -> Publisher:
        _PUBLISHERS[kind.name], _DUE[kind.name] = publisher, due
        return publisher
    return register


def publishers() -> dict[str, Publisher]:
    """Every pipeline kind's outbox job kind and its publisher (KeyError: a kind registered without one)."""
    return {kind.job: _PUBLISHERS[kind.name] for kind in pipeline_kinds()}


def due_jobs() -> tuple[DueJobs, ...]:
    """Every pipeline kind's source of due jobs, in registry order."""
    return tuple(_DUE[kind.name] for kind in pipeline_kinds())
