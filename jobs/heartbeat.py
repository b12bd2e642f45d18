"""Process liveness: each worker that takes a ``heartbeat`` message, and the clock process on each
tick, upserts its row in ``process_heartbeats``; ``/metrics`` reports the age of the freshest one
per kind, so an operator sees a stalled queue or a dead clock before due work piles up."""

from __future__ import annotations

import os
import socket

import dramatiq

from gateway.clock import Clock
from gateway.store.db import Database
from jobs import runtime
from jobs.broker import QUEUE

_BEAT = """
INSERT INTO process_heartbeats (process_id, kind, started_at, seen_at)
VALUES (%(process_id)s, %(kind)s, %(now)s, %(now)s)
ON CONFLICT (process_id) DO UPDATE
   SET seen_at = GREATEST(process_heartbeats.seen_at, EXCLUDED.seen_at),
       beats = process_heartbeats.beats + 1
"""


def process_id(kind: str) -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}"


async def beat(db: Database, clock: Clock, kind: str) -> None:
    """Record that this process of ``kind`` is alive now."""
    async with db.transaction() as conn:
        await conn.execute(_BEAT, {"process_id": process_id(kind), "kind": kind, "now": clock.now()})


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=30_000)
async def heartbeat() -> None:
    """A worker took a message off the queue: proof the broker-to-worker path works."""
    current = await runtime.current()
    await beat(current.db, current.clock, "worker")
