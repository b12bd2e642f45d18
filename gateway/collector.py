"""The garbage collector of a long-running process (the ``web`` and ``worker`` processes), settled
once the objects it lives on are built (docs/decisions/0080, 0086)."""

from __future__ import annotations

import gc

# Tracked objects allocated and not yet freed before a young collection (CPython's default: 700).
YOUNG_COLLECTION_THRESHOLD = 10_000


def settle_collector() -> None:
    """Every object alive now (modules, classes, compiled queries: ~90,000 tracked by the garbage
    collector in the web process) is moved out of the collector's reach (``gc.freeze``): a full
    collection no longer walks them all, which took 30-100 ms of one web worker's event loop,
    every request in it waiting (the ingest's p99, docs/decisions/0080). Nothing built by then is
    garbage, so nothing is kept that would be freed. A request's or a message's objects are freed
    by their reference counts, not by the collector; at CPython's default threshold a young
    collection ran every other notification or so and cost ~15% of the web process's CPU per
    notification, so it runs once ``YOUNG_COLLECTION_THRESHOLD`` objects are outstanding
    (docs/decisions/0086): cyclic garbage is still collected, at most that many objects later."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
