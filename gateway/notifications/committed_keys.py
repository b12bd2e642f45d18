"""The notification keys this process has seen committed, at most ``size`` of them, least recently
used first out (docs/decisions/0064).

Seed 004, "Notification Deduplication": a duplicate is acknowledged only when the first delivery was
recorded, and seed 000: acknowledge only after commit. A key enters only after the transaction
that recorded it, or that found it recorded by another, has committed; so a key held here names a
notification PostgreSQL holds, and a delivery with that key is a duplicate the database would
answer the same way. A key not held here proves nothing (another process recorded it, it was
evicted, this process restarted): the delivery goes to the database as before. Nothing is ever
removed from the store of notifications, so a held key never goes stale.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager


class CommittedKeys:
    """A bounded LRU set of (provider account, notification key); ``size`` 0 holds nothing."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        self._size = size
        self._keys: OrderedDict[tuple[str, str], None] = OrderedDict()

    def holds(self, provider_account: str, key: str | None) -> bool:
        """Whether this key was seen committed (and is still remembered); an unkeyed delivery
        never is, since every unkeyed delivery is its own notification."""
        if key is None:
            return False
        entry = (provider_account, key)
        if entry not in self._keys:
            return False
        self._keys.move_to_end(entry)
        return True

    def committed(self, provider_account: str, key: str | None) -> None:
        """Remember a key whose recording transaction has COMMITTED (call only after the commit)."""
        if key is None or self._size == 0:
            return
        entry = (provider_account, key)
        self._keys[entry] = None
        self._keys.move_to_end(entry)
        while len(self._keys) > self._size:
            self._keys.popitem(last=False)

    def __contains__(self, entry: object) -> bool:
        """Whether ``(provider_account, key)`` is held, without marking it used."""
        return entry in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class KeysInFlight:
    """The keys this process is recording right now. A second delivery of one waits for the first's
    transaction to end, in the process, instead of in PostgreSQL on its uncommitted insert (which
    would hold a connection, or stall a shared transaction, for as long): then the key is either
    committed (a duplicate, answered from :class:`CommittedKeys`) or not (it goes to the database)."""

    def __init__(self) -> None:
        self._ends: dict[tuple[str, str], asyncio.Event] = {}

    async def wait_for_first(self, provider_account: str, key: str | None) -> bool:
        """Wait until no delivery of this key is being recorded here; whether one was."""
        end = self._ends.get((provider_account, key)) if key is not None else None
        if end is None:
            return False
        await end.wait()
        return True

    @contextmanager
    def recording(self, provider_account: str, key: str | None) -> Iterator[None]:
        """While this delivery's transaction runs (the first of its key here, or an unkeyed one)."""
        entry = (provider_account, key) if key is not None else None
        if entry is None or entry in self._ends:
            yield
            return
        end = self._ends[entry] = asyncio.Event()
        try:
            yield
        finally:
            del self._ends[entry]
            end.set()
