"""Pause past the lease (seed 000 "lease epochs", seed 004 "The Recovery Loop"): SIGSTOP a
worker while it holds a lease, keep it stopped until that lease lapsed and another worker took
the attempt over, then SIGCONT it and let it wake up believing it still owns what it held.

Which worker holds what is read from PostgreSQL. A checkout recovery lease names its holder
(``recovery_owner`` carries the worker's pid, ``gateway/recovery/loop.py``); a payout, recall or
refund attempt's lease names only the service (``claimed_by``), so a worker is stopped while such
a lease is held and the lease is counted as the stopped worker's only if it then lapsed: a live
worker would have released it before its expiry. A lease *lapsed* when it was still held as at
the stop at or after its expiry; it was *taken over* when it then changed (fenced by the sweeper,
claimed by the other worker's recovery, or resolved). The watch is pure (:class:`Watch`); the
reads are one query each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

# How long to wait for the target to hold a lease, how often to look, and how long after the last
# watched lease's expiry to wait for its takeover before continuing the worker regardless.
LEASE_WAIT_S = 20.0
POLL_S = 0.05
WATCH_POLL_S = 0.2
TAKEOVER_WAIT_S = 10.0

# (kind, table, held, signature, owner): a lease's signature changes when its holder releases,
# loses or resolves it.
_TABLES = (
    ("payment", "payment_attempts", "recovery_owner IS NOT NULL",
     "coalesce(recovery_owner, '') || ' ' || coalesce(lease_token::text, '')", "recovery_owner"),
    ("payout", "payout_attempts", "state IN ('Claimed', 'Started')", "lease_epoch || ' ' || state", "NULL"),
    ("recall", "payout_recall_attempts", "state IN ('Claimed', 'Started')", "lease_epoch || ' ' || state", "NULL"),
    ("refund", "payment_refund_attempts", "state IN ('Claimed', 'Started')", "lease_epoch || ' ' || state",
     "NULL"),
)
HELD = " UNION ALL ".join(
    f"SELECT '{kind}' AS kind, attempt_id::text AS attempt_id, {owner} AS owner, {signature} AS signature, "
    f"lease_expires_at AS expires_at FROM {table} WHERE {held} AND lease_expires_at > clock_timestamp()"
    for kind, table, held, signature, owner in _TABLES)
# The signatures and the time of the snapshot they were read in (statement_timestamp() precedes
# it by microseconds): "unchanged at or after expiry" is then true of the rows themselves.
SIGNATURES = "WITH s (attempt_id, signature) AS (" + " UNION ALL ".join(
    f"SELECT attempt_id::text, {signature} FROM {table} WHERE attempt_id::text = ANY(%(ids)s)"
    for _, table, _, signature, _ in _TABLES) + (
    ") SELECT statement_timestamp(), (SELECT coalesce(jsonb_object_agg(attempt_id, signature), '{}') FROM s)")

# Sessions waiting for a lock that a transaction left open (idle in transaction) holds: what a
# worker stopped inside a transaction does to everyone else.
BLOCKED = """
SELECT count(*) FROM pg_stat_activity waiting
 WHERE waiting.wait_event_type = 'Lock'
   AND EXISTS (SELECT 1 FROM pg_stat_activity holder
                WHERE holder.pid = ANY(pg_blocking_pids(waiting.pid))
                  AND holder.state LIKE 'idle in transaction%%')
"""


@dataclass(frozen=True)
class Lease:
    kind: str  # payment (checkout recovery), payout, recall, refund
    attempt_id: str
    owner: str | None  # the recovery owner of a payment lease; None: not recorded per process
    signature: str
    expires_at: datetime


def owner_pid(owner: str | None) -> int | None:
    """The pid in a recovery owner ``recovery-<host>-<pid>-<hex>``, or None."""
    if not owner:
        return None
    parts = owner.rsplit("-", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def candidates(held: list[Lease], is_target: Callable[[int], bool]) -> list[Lease]:
    """The leases the stopped worker may hold: its own recovery leases, and every pipeline lease
    (whose holder is not recorded per process)."""
    return [lease for lease in held
            if lease.owner is None or ((pid := owner_pid(lease.owner)) is not None and is_target(pid))]


@dataclass
class Watch:
    """The watched leases of one pause, fed observations of their signatures."""

    leases: list[Lease]
    released: set[str] = field(default_factory=set)  # changed before expiry: not the stopped worker's
    lapsed: set[str] = field(default_factory=set)  # unchanged at or after expiry
    taken_over: set[str] = field(default_factory=set)  # changed after lapsing

    def observe(self, now: datetime, signatures: dict[str, str]) -> None:
        for lease in self.leases:
            changed = signatures.get(lease.attempt_id) != lease.signature
            if lease.attempt_id in self.lapsed:
                if changed:
                    self.taken_over.add(lease.attempt_id)
            elif changed:
                if now < lease.expires_at:
                    self.released.add(lease.attempt_id)
            elif now >= lease.expires_at:
                self.lapsed.add(lease.attempt_id)

    def settled(self, now: datetime, hold_s: float) -> bool:
        """Every lease released or taken over, and ``hold_s`` past the last expiry; or given up
        waiting for a takeover ``TAKEOVER_WAIT_S`` after it."""
        last = max((lease.expires_at for lease in self.leases), default=now)
        if now >= last + timedelta(seconds=TAKEOVER_WAIT_S):
            return True
        open_ = [lease for lease in self.leases
                 if lease.attempt_id not in self.released and lease.attempt_id not in self.taken_over]
        return not open_ and now >= last + timedelta(seconds=hold_s)

    def missed(self) -> bool:
        """Nothing watched lapsed and every lease was released before its expiry: all of it was
        another worker's (or there was nothing to watch)."""
        return not self.lapsed and all(lease.attempt_id in self.released for lease in self.leases)

    def kinds(self) -> Counter[str]:
        """The lapsed leases by kind."""
        return Counter(lease.kind for lease in self.leases if lease.attempt_id in self.lapsed)


@dataclass(frozen=True)
class Outcome:
    worker: int
    lapsed: Counter[str]  # by kind
    taken_over: int
    stopped_s: float
    blocked: int  # sessions waiting, at the end of the pause, on a lock the stopped worker's transaction held
    not_taken_over: list[str]  # lapsed leases' attempt ids nobody took over while it was stopped
    misses: int = 0  # earlier stops that caught no lease of the stopped worker's (continued at once)


async def held(conn: psycopg.AsyncConnection[Any]) -> list[Lease]:
    rows = await (await conn.execute(HELD)).fetchall()
    return [Lease(*row) for row in rows]


async def observe(conn: psycopg.AsyncConnection[Any], watch: Watch) -> datetime:
    """Feed ``watch`` the signatures of its leases; the database's time of the reading."""
    row = await (await conn.execute(SIGNATURES, {"ids": [lease.attempt_id for lease in watch.leases]})).fetchone()
    assert row is not None
    now, signatures = row
    watch.observe(now, signatures)
    return now  # type: ignore[no-any-return]


def choose(held: list[Lease], worker_of: Callable[[int], int | None], preferred: int,
           waited_s: float) -> int | None:
    """Which worker to stop now, or None to wait on: one that holds a recovery lease (certainly its
    own; the preferred one if both do), else, after half the wait, the preferred one while a
    pipeline lease (whose holder is not recorded) is held."""
    holders = {worker_of(pid) for lease in held if (pid := owner_pid(lease.owner)) is not None} - {None}
    if holders:
        return preferred if preferred in holders else min(holders)  # type: ignore[type-var]
    if any(lease.owner is None for lease in held) and waited_s >= LEASE_WAIT_S / 2:
        return preferred
    return None


async def pause_past_lease(database_url: str, preferred: int, hold_s: float, *,
                           stop: Callable[[int], object], resume: Callable[[int], object],
                           worker_of: Callable[[int], int | None],
                           clock: Callable[[], float], sleep: Callable[[float], Awaitable[None]]) -> Outcome:
    """Wait (at most ``LEASE_WAIT_S``) until a worker holds a lease (:func:`choose`), stop it,
    watch what it held lapse and be taken over (plus ``hold_s``), continue it; what its stop did.
    A stop that turns out to have caught nothing of the stopped worker's (every lease it might
    hold was released before its expiry: another worker's) is continued at once and the wait goes
    on, the other worker preferred next (``misses``); once the wait is over the last stop lasts
    ``hold_s`` whatever it caught, and says so."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        began = clock()
        misses = 0
        while True:
            worker = None
            while worker is None and clock() < began + LEASE_WAIT_S:
                worker = choose(await held(conn), worker_of, preferred, clock() - began)
                if worker is None:
                    await sleep(POLL_S)
            last = worker is None or clock() >= began + LEASE_WAIT_S
            worker = worker or preferred
            stopped_at = clock()
            watch, blocked = await _stop(conn, worker, hold_s, last, stop=stop, resume=resume, worker_of=worker_of,
                                         sleep=sleep)
            if watch.lapsed or last:
                break
            misses += 1
            preferred = OTHER_WORKER[worker]
    return Outcome(worker, watch.kinds(), len(watch.taken_over), clock() - stopped_at, blocked,
                   sorted(watch.lapsed - watch.taken_over), misses)


# After a miss on one worker, the other is preferred (the campaign's fleet has two).
OTHER_WORKER = {1: 2, 2: 1}


async def _stop(conn: psycopg.AsyncConnection[Any], worker: int, hold_s: float, last: bool, *,
                stop: Callable[[int], object], resume: Callable[[int], object],
                worker_of: Callable[[int], int | None], sleep: Callable[[float], Awaitable[None]]) -> tuple[Watch, int]:
    """One stop of ``worker``: until its leases lapsed and were taken over (``Watch.settled``), or,
    unless this is the ``last`` try, until it shows it held none (``Watch.missed``); the watch and
    the sessions its open transaction blocked at the end."""
    stop(worker)
    try:
        watch = Watch(candidates(await held(conn), lambda pid: worker_of(pid) == worker))
        if last and not watch.leases:
            await sleep(hold_s)  # nothing to watch, and no time left to look again: the stop is kept
        while watch.leases and not watch.settled(await observe(conn, watch), hold_s):
            if not last and watch.missed():
                break
            await sleep(WATCH_POLL_S)
        row = await (await conn.execute(BLOCKED)).fetchone()
    finally:
        resume(worker)
    return watch, int(row[0]) if row else 0
