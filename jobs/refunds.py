"""Refund actors (docs/decisions/0019): the pipeline's executor, sweeper and
reconciler for the refund attempt kind, and the check that escalates a cancelled order's money
with no refund under way.

``execute_payment_refund`` carries references only (order id, grant id, correlation id); the
worker presents the grant as ``svc-payment-refund-worker``. ``publish_payment_refund_job`` is what
the outbox relay calls for a ``payment-refund-job`` row.
"""

from __future__ import annotations

from typing import Any

import dramatiq

from gateway.clock import Clock
from gateway.domain import attempt_kinds
from gateway.pipeline.reconciler import Reconciler
from gateway.pipeline.sweeper import sweep_leases
from gateway.refunds.attempts import EXECUTOR, REFUND, RefundJob
from gateway.refunds.decisions import DUE_JOBS, expire_unused_grants
from gateway.refunds.settlement import raise_owed
from jobs import runtime
from jobs.attempts import execute, job_of, publish
from jobs.broker import QUEUE


@job_of(attempt_kinds.PAYMENT_REFUND, DUE_JOBS)
def publish_payment_refund_job(payload: dict[str, Any], clock: Clock) -> dramatiq.Message[Any]:
    """Deliver one ``payment-refund-job`` outbox row: the message, due at once (the grant's not_before)."""
    return publish(execute_payment_refund, payload, clock, "order_id")


@dramatiq.actor(queue_name=QUEUE, max_retries=3, min_backoff=1_000, time_limit=120_000)
async def execute_payment_refund(order_id: str, grant_id: str, correlation_id: str) -> None:
    await execute(REFUND, EXECUTOR, RefundJob(order_id, grant_id, correlation_id))


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def sweep_refunds() -> None:
    """Fence lapsed refund leases (Claimed -> NotStarted, Started -> Unknown), expire refund grants
    whose window closed unclaimed, then escalate every PaidAfterCancel order with no refund under way."""
    current = await runtime.current()
    await sweep_leases(REFUND, current.db, current.clock)
    reminder_interval_s = current.settings.reminder_interval_s
    await expire_unused_grants(current.db, current.clock, reminder_interval_s=reminder_interval_s)
    await raise_owed(current.db, current.clock, reminder_interval_s=reminder_interval_s)


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=120_000)
async def reconcile_refunds() -> None:
    current = await runtime.current()
    await Reconciler(REFUND, current.db, current.clock, current.settings, current.http).run_once()
