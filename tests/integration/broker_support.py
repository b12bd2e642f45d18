"""Real Dramatiq workers on the real broker for the broker-loss tests: a worker
that takes and holds a delayed message, the broker losing its data (``FLUSHALL``), and what is
left in it. Workers here are in-process ``dramatiq.Worker`` instances on ``jobs.broker``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import dramatiq

from jobs.broker import QUEUE

NAMESPACE = "dramatiq"  # RedisBroker's default key namespace


def start_worker(broker: dramatiq.Broker) -> dramatiq.Worker:
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    return worker


async def until_held(broker: Any, held: int = 1, timeout_s: float = 20.0) -> None:
    """Wait until a running worker has taken ``held`` delayed messages off the broker's delay
    queue into its own memory (the broker still lists them as unacknowledged) and has finished
    every other message (an acknowledged message leaves no stored copy)."""
    deadline = time.monotonic() + timeout_s
    while True:
        waiting = broker.client.llen(f"{NAMESPACE}:{QUEUE}.DQ")
        stored = broker.client.hlen(f"{NAMESPACE}:{QUEUE}.DQ.msgs")
        unfinished = broker.client.hlen(f"{NAMESPACE}:{QUEUE}.msgs")
        if waiting == 0 and stored == held and unfinished == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the worker did not take the delayed message ({waiting} waiting, {stored} stored,"
                                 f" {unfinished} other messages unfinished)")
        await asyncio.sleep(0.05)


def flushall(broker: Any) -> None:
    """The broker loses every key: a restart without persistence, a failover, an operator's FLUSHALL.
    Only the database the tests' broker uses is emptied (FLUSHDB): a server given in ``REDIS_URL``
    may be shared by pytest-xdist workers, each on its own database number."""
    broker.client.flushdb()


def queued(broker: Any) -> int:
    """Messages the broker still holds for the paygate queue: waiting, delayed or unacknowledged."""
    return int(broker.do_qsize(QUEUE))
