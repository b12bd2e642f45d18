"""The outbox dispatcher (seed 004, "Downstream Work"; checklist items 18 and 21).

One batch is one transaction: claim the eligible rows with ``FOR UPDATE SKIP LOCKED`` (see the
``claim_due`` SQL for eligibility: due, unfinished, and no unfinished earlier row with the same
ordering key), deliver them concurrently within the delivery budget while their row locks are
held, then record each outcome and commit. Holding the locks is what makes a predecessor that is
in flight block its successors for every other dispatcher, and a crash (or a hung process, cut
off by ``idle_in_transaction_session_timeout``) rolls the claim back so the rows are delivered
again later: at least once, in order (docs/decisions/0005-...).

A failure counts the attempt, records the error and backs off exponentially; the
``outbox_max_failures``-th failure dead-letters the row and, for a business effect, raises the
escalation ``outbox:<message_id>:dead-lettered`` in the same transaction, whose alert has no
ordering key and so is delivered regardless. A dead-lettered operator alert raises nothing: its
alert would go to the same failing sink, and so on without end; it is logged, counted in
``/metrics`` and listed by ``GET /v1/ops/outbox?state=dead``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import httpx
import structlog

from gateway.clock import Clock
from gateway.domain.outbox_policy import (
    BackOff,
    RetryPolicy,
    after_failure,
    dead_letter_escalation_key,
    describe_error,
)
from gateway.escalations.store import raise_escalation
from gateway.outbox.delivery import Publisher, deliver
from gateway.outbox.store import OPERATOR_ALERT
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.outbox")

BATCH_SIZE = 50
# Batches in flight at once in one dispatch_due (each holds a database connection while it delivers).
STREAMS = 2
# Beyond the delivery budget, how long the server waits before it ends a silent claim transaction.
IDLE_GRACE_S = 5.0
DEAD_LETTERED = "outbox-dead-lettered"

log = structlog.get_logger("gateway.outbox")


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(settings.outbox_backoff_initial_s, settings.outbox_backoff_max_s, settings.outbox_max_failures)


async def dispatch_batch(db: Database, clock: Clock, settings: Settings, sinks: httpx.AsyncBaseTransport,
                         *, limit: int = BATCH_SIZE, publishers: Mapping[str, Publisher] | None = None) -> int:
    """Claim, deliver and settle one batch of eligible rows; how many rows it claimed."""
    async with db.transaction() as conn:
        timeout_ms = int((settings.outbox_delivery_budget_s + IDLE_GRACE_S) * 1000)
        await conn.execute(_SQL["bound_idle_transaction"], {"timeout_ms": str(timeout_ms)})
        rows = await fetch_all(conn, _SQL["claim_due"], {"now": clock.now(), "limit": limit})
        outcomes = await asyncio.gather(*(deliver(row, settings, clock, sinks, publishers) for row in rows),
                                        return_exceptions=True)
        delivered = []
        for row, outcome in zip(rows, outcomes, strict=True):
            error = _unexpected(row, outcome) if isinstance(outcome, BaseException) else outcome
            if error is None:
                delivered.append(row["message_id"])
            else:
                await _record_failure(conn, row, describe_error(error), clock, settings)
        if delivered:
            await conn.execute(_SQL["mark_dispatched"], {"message_ids": delivered, "now": clock.now()})
    return len(rows)


async def dispatch_due(db: Database, clock: Clock, settings: Settings, sinks: httpx.AsyncBaseTransport,
                       *, max_batches: int = 20, publishers: Mapping[str, Publisher] | None = None,
                       streams: int = STREAMS) -> int:
    """Dispatch batches until nothing is eligible (or ``max_batches`` in all); how many rows it
    claimed. Settling a row can make its successor eligible, so the next batch delivers that one
    without waiting for another wake-up; failed rows back off and are not due again in this pass.
    The cap leaves the rest to the next wake-up, so one message never runs unbounded.

    ``streams`` batches run at once, each its own claim transaction, so one batch's deliveries
    overlap another's claim and commit instead of waiting for them. They are dispatchers racing as
    separate processes would (the claim skips rows another holds, and a row whose predecessor is
    held is not eligible), so every key stays in order and every row is delivered at least once;
    a stream that finds nothing eligible ends, the others go on."""
    left = max_batches

    async def stream() -> int:
        nonlocal left
        total = 0
        while left > 0:
            left -= 1
            claimed = await dispatch_batch(db, clock, settings, sinks, publishers=publishers)
            total += claimed
            if claimed == 0:
                break
        return total

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(stream()) for _ in range(streams)]
    return sum(task.result() for task in tasks)


def _unexpected(row: dict[str, Any], exc: BaseException) -> str:
    """A bug while delivering one row is that row's failure, counted like any other, so a row
    that always fails this way is dead-lettered instead of rolling back its whole batch forever."""
    log.error("outbox_delivery_crashed", message_id=row["message_id"], error_type=type(exc).__name__, exc_info=exc)
    return f"internal error: {type(exc).__name__}"


async def _record_failure(conn: Connection, row: dict[str, Any], error: str, clock: Clock,
                          settings: Settings) -> None:
    now = clock.now()
    decision = after_failure(row["delivery_attempts"] + 1, retry_policy(settings))
    ids = {"message_id": row["message_id"], "dedup_key": row["dedup_key"], "kind": row["kind"],
           "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None}
    if isinstance(decision, BackOff):
        next_attempt_at = now + timedelta(seconds=decision.delay_s)
        await conn.execute(_SQL["back_off"], {"message_id": row["message_id"], "last_error": error,
                                              "next_attempt_at": next_attempt_at})
        log.warning("outbox_delivery_failed", **ids, error=error, delay_s=decision.delay_s)
        return
    await conn.execute(_SQL["dead_letter"], {"message_id": row["message_id"], "last_error": error, "now": now})
    log.error("outbox_dead_lettered", **ids, error=error, failures=row["delivery_attempts"] + 1)
    if row["kind"] == OPERATOR_ALERT:
        return
    await raise_escalation(conn, escalation_key=dead_letter_escalation_key(row["message_id"]),
                           reason=DEAD_LETTERED, now=now, reminder_interval_s=settings.reminder_interval_s,
                           attempt_id=row["attempt_id"],
                           details={"message_id": row["message_id"], "dedup_key": row["dedup_key"],
                                    "kind": row["kind"], "ordering_key": row["ordering_key"],
                                    "last_error": error})
