"""The one Redis broker of this process, installed before any actor is declared.

Redis only carries wake-up messages: losing the broker loses no payment, because every sweep
finds its due work in PostgreSQL (DESIGN.md, "Embedded default and scale-out"). The URL comes from
``REDIS_URL``; redis-py connects lazily, so building the broker does not need a live server.
"""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware.asyncio import AsyncIO

from jobs.runtime import RuntimeLifecycle

QUEUE = "paygate"


def build_broker(redis_url: str) -> RedisBroker:
    """A Redis broker whose async actors run on the worker's event-loop thread."""
    built = RedisBroker(url=redis_url)  # type: ignore[no-untyped-call]  # dramatiq leaves it unannotated
    built.add_middleware(AsyncIO())
    built.add_middleware(RuntimeLifecycle())
    return built


def _redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        raise RuntimeError("REDIS_URL is not set: the job system needs the broker's URL "
                           "(paygate up sets it for the processes it starts)")
    return url


broker = build_broker(_redis_url())
dramatiq.set_broker(broker)
