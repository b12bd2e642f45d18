"""Payout actors (seed 000): the pipeline's executor, sweeper and reconciler (gateway.pipeline)
for the payout and payout recall attempt kinds.

``execute_payout`` carries references only (payout id, grant id, correlation id); the worker
presents the grant as ``svc-payout-worker`` and the executor decides everything from the
database. A postponed delivery (context unavailable, or early) is re-sent for later while the
grant's window is open; after that the grant expires unused. ``publish_payout_job`` is what the
outbox relay calls for a ``payout-job`` row: it sends the message delayed to ``not_before``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.payouts.attempts import EXECUTOR, PAYOUT
from gateway.payouts.recalls import RECALL, RECALL_EXECUTOR
from gateway.payouts.sweeper import sweep_once
from gateway.payouts.validation import PayoutJob
from gateway.pipeline.executor import Executor
from gateway.pipeline.kind import AttemptKind, Postponed, Presenter
from gateway.pipeline.reconciler import Reconciler
from jobs import runtime
from jobs.broker import QUEUE

POSTPONE_S = 15.0


def _delay_ms(until: datetime, clock: Clock) -> int:
    return max(0, int((until - clock.now()).total_seconds() * 1000))


def _publish(actor: dramatiq.Actor[Any, Any], payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """One job outbox row as its actor's message (references only), delayed until ``deliver_at``."""
    return actor.send_with_options(args=(payload["payout_id"], payload["grant_id"], payload["correlation_id"]),
                                   delay=_delay_ms(datetime.fromisoformat(payload["deliver_at"]), clock))


async def _execute(actor: dramatiq.Actor[Any, Any], kind: AttemptKind, presenter: Presenter,
                   payout_id: str, grant_id: str, correlation_id: str) -> None:
    """Run one delivery; a postponed one is re-sent to ``actor`` for later."""
    current = await runtime.current()
    outcome = await Executor(kind, current.db, current.clock, current.settings, presenter, current.http).run(
        PayoutJob(payout_id, grant_id, correlation_id))
    if isinstance(outcome, Postponed):
        later = outcome.until or current.clock.now() + timedelta(seconds=POSTPONE_S)
        actor.send_with_options(args=(payout_id, grant_id, correlation_id), delay=_delay_ms(later, current.clock))


def publish_payout_job(payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """Deliver one ``payout-job`` outbox row: the message, delayed until the grant's not_before."""
    return _publish(execute_payout, payload, clock)


@dramatiq.actor(queue_name=QUEUE, max_retries=3, min_backoff=1_000, time_limit=120_000)
async def execute_payout(payout_id: str, grant_id: str, correlation_id: str) -> None:
    await _execute(execute_payout, PAYOUT, EXECUTOR, payout_id, grant_id, correlation_id)


def publish_payout_recall_job(payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """Deliver one ``payout-recall-job`` outbox row (docs/decisions/0015): references only."""
    return _publish(execute_payout_recall, payload, clock)


@dramatiq.actor(queue_name=QUEUE, max_retries=3, min_backoff=1_000, time_limit=120_000)
async def execute_payout_recall(payout_id: str, grant_id: str, correlation_id: str) -> None:
    await _execute(execute_payout_recall, RECALL, RECALL_EXECUTOR, payout_id, grant_id, correlation_id)


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def sweep_payouts() -> None:
    current = await runtime.current()
    await sweep_once(current.db, current.clock)


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=120_000)
async def reconcile_payouts() -> None:
    current = await runtime.current()
    for kind in (PAYOUT, RECALL):
        await Reconciler(kind, current.db, current.clock, current.settings, current.http).run_once()
