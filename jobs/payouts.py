"""Payout actors (seed 000): the pipeline's executor, sweeper and reconciler (gateway.pipeline)
for the payout and payout recall attempt kinds.

``execute_payout`` carries references only (payout id, grant id, correlation id); the worker
presents the grant as ``svc-payout-worker`` and the executor decides everything from the
database. A postponed delivery (context unavailable, or early) ends there: the grant stays Issued,
and the grants sweep publishes its job again while the window is open (jobs/redelivery.py); after
that the grant expires unused and is escalated (jobs/grants.py). ``publish_payout_job`` is what
the outbox relay calls for a ``payout-job`` row: it sends the message delayed to ``not_before``,
and the sweep calls it again for a due grant nobody claimed.
"""

from __future__ import annotations

from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.domain import attempt_kinds
from gateway.payouts.attempts import EXECUTOR, PAYOUT
from gateway.payouts.grant_sweep import PAYOUT_JOBS, RECALL_JOBS
from gateway.payouts.recalls import RECALL, RECALL_EXECUTOR
from gateway.payouts.sweeper import sweep_once
from gateway.payouts.validation import PayoutJob
from gateway.pipeline.reconciler import Reconciler
from jobs import runtime
from jobs.attempts import execute, job_of, publish
from jobs.broker import QUEUE


@job_of(attempt_kinds.PAYOUT, PAYOUT_JOBS)
def publish_payout_job(payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """Deliver one ``payout-job`` outbox row: the message, delayed until the grant's not_before."""
    return publish(execute_payout, payload, clock, "payout_id")


@dramatiq.actor(queue_name=QUEUE, max_retries=3, min_backoff=1_000, time_limit=120_000)
async def execute_payout(payout_id: str, grant_id: str, correlation_id: str) -> None:
    await execute(PAYOUT, EXECUTOR, PayoutJob(payout_id, grant_id, correlation_id))


@job_of(attempt_kinds.PAYOUT_RECALL, RECALL_JOBS)
def publish_payout_recall_job(payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """Deliver one ``payout-recall-job`` outbox row (docs/decisions/0015): references only."""
    return publish(execute_payout_recall, payload, clock, "payout_id")


@dramatiq.actor(queue_name=QUEUE, max_retries=3, min_backoff=1_000, time_limit=120_000)
async def execute_payout_recall(payout_id: str, grant_id: str, correlation_id: str) -> None:
    await execute(RECALL, RECALL_EXECUTOR, PayoutJob(payout_id, grant_id, correlation_id))


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def sweep_payouts() -> None:
    current = await runtime.current()
    await sweep_once(current.db, current.clock)


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=120_000)
async def reconcile_payouts() -> None:
    current = await runtime.current()
    for kind in (PAYOUT, RECALL):
        await Reconciler(kind, current.db, current.clock, current.settings, current.http).run_once()
