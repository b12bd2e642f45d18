"""Versioned schema migrations (docs/decisions/0034, docs/migrations.md).

A migration is a file ``gateway/store/migrations/NNNN_<what>.sql`` of raw SQL, numbered from
0001 without gaps. :func:`migrate` runs, under one PostgreSQL advisory lock, every migration the
database has not recorded, in order, each in its own transaction together with its record
(version, name, SHA-256 of its text, when); a second migrator waits for the lock, then finds
nothing left to do. Before it runs anything it compares each recorded checksum with the file's:
a migration changed after it was applied stops it (drift). A database that has paygate's tables
but no records (made by ``paygate db init`` before migrations existed) is adopted: its catalog is
compared with the schema after each migration, and the versions up to the first one it equals are
recorded as ``adopted`` without running them.

Processes that work on the database call :func:`require_current` when they start: a database
that lacks a migration of this build is refused (its SQL may name what is not there yet); one
that has migrations of a newer build is accepted, because every migration keeps the previous
release working (expand/contract, docs/migrations.md; docs/decisions/0035).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any

import psycopg
import structlog

from gateway.clock import Clock
from gateway.store.catalog import describe, differences, live_schema, scratch_catalogs
from gateway.store.db import Database
from gateway.store.queries import load_queries

LOCK_KEY = 0x70_61_79_67  # 'payg': the key `paygate db init` has always locked the schema with
# How long one migration may wait for a table lock. An ALTER TABLE queued behind a long transaction
# makes every later query on that table queue behind it: a payment stall, bounded by this.
LOCK_TIMEOUT_S = 5.0
MIGRATIONS_DIR = "gateway/store/migrations"
_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
_SQL = load_queries("gateway.store", "migrate.sql")

log = structlog.get_logger("gateway.store.migrate")


class MigrationError(Exception):
    """The schema cannot be migrated as it is; the message says why and what to do."""


class SchemaNotCurrent(MigrationError):
    """The database lacks migrations this build needs."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str = field(repr=False)

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"

    @property
    def checksum(self) -> str:
        """SHA-256 of the file's text: what the database records and later compares."""
        return hashlib.sha256(self.sql.encode()).hexdigest()


@dataclass(frozen=True)
class Record:
    """A row of ``paygate_schema_migrations``."""

    version: int
    name: str
    checksum: str
    method: str
    applied_at: datetime

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"


def shipped() -> list[Migration]:
    """The migrations of this build, in order (:func:`parse_migrations`)."""
    directory = resources.files("gateway.store").joinpath("migrations")
    return parse_migrations({entry.name: entry.read_text(encoding="utf-8")
                             for entry in directory.iterdir() if entry.name.endswith(".sql")})


def parse_migrations(files: Mapping[str, str]) -> list[Migration]:
    """``{file name: text}`` as migrations in order, numbered 0001, 0002, ... with no gap or twin:
    two branches that each added the next number meet here, and the one landing second renumbers."""
    migrations = []
    for filename, text in files.items():
        match = _FILE.match(filename)
        if match is None:
            raise MigrationError(f"{MIGRATIONS_DIR}/{filename}: a migration is named NNNN_<what>.sql")
        migrations.append(Migration(int(match["version"]), match["name"], text))
    migrations.sort(key=lambda m: m.version)
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise MigrationError(f"{MIGRATIONS_DIR}: expected migration {expected:04d}, found {migration.label} "
                                 "(numbers run from 0001 without gaps or twins; renumber the newest)")
    return migrations


@dataclass(frozen=True)
class Status:
    """Where a database stands against a build's migrations."""

    records: tuple[Record, ...]
    pending: tuple[Migration, ...]  # not applied yet
    changed: tuple[tuple[Migration, Record], ...]  # applied, and the file differs since: drift
    newer: tuple[Record, ...]  # applied by a newer build; this one does not know them


def status_of(migrations: Sequence[Migration], records: Sequence[Record]) -> Status:
    """Compare a build's migrations with a database's records (pure)."""
    by_version = {record.version: record for record in records}
    known = {migration.version for migration in migrations}
    return Status(
        records=tuple(records),
        pending=tuple(m for m in migrations if m.version not in by_version),
        changed=tuple((m, by_version[m.version]) for m in migrations
                      if m.version in by_version and by_version[m.version].checksum != m.checksum),
        newer=tuple(r for r in records if r.version not in known),
    )


@dataclass(frozen=True)
class Outcome:
    """What one :func:`migrate` did: versions adopted as already in place, then versions run."""

    adopted: tuple[Migration, ...]
    applied: tuple[Migration, ...]


def migrate(url: str, clock: Clock, migrations: Sequence[Migration] | None = None, *,
            lock_timeout_s: float = LOCK_TIMEOUT_S) -> Outcome:
    """Bring the database at ``url`` to this build's last migration; idempotent, and safe to run
    from several processes at once (they take turns on the advisory lock)."""
    migrations = shipped() if migrations is None else migrations
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_SQL["lock"], {"key": LOCK_KEY})
        try:
            return _migrate_locked(conn, clock, migrations, lock_timeout_s)
        finally:
            if not conn.closed:
                conn.execute(_SQL["unlock"], {"key": LOCK_KEY})


def _migrate_locked(conn: psycopg.Connection[Any], clock: Clock, migrations: Sequence[Migration],
                    lock_timeout_s: float) -> Outcome:
    conn.execute(_SQL["create_records"])
    records = _records(conn)
    adopted: tuple[Migration, ...] = ()
    if not records:
        adopted = _adopt(conn, clock, migrations)
        records = _records(conn)
    state = status_of(migrations, records)
    if state.changed:
        raise MigrationError(_describe_changed(state) + "\na migration never changes once applied: restore the "
                             "file, and make the change in a new migration")
    for migration in state.pending:
        try:
            with conn.transaction():
                conn.execute(_SQL["lock_timeout"], {"timeout": f"{round(lock_timeout_s * 1000)}ms"})
                conn.execute(migration.sql.encode())  # trusted, shipped SQL
                _record(conn, migration, "applied", clock.now())
        except psycopg.errors.LockNotAvailable as exc:
            raise MigrationError(
                f"migration {migration.label} waited {lock_timeout_s:g} s for a table lock that another transaction "
                "holds (and every query on that table waited behind it), so it gave up and nothing of it was "
                "applied; run `paygate db migrate` again once that transaction has ended (docs/migrations.md)") from exc
    return Outcome(adopted=adopted, applied=state.pending)


def _adopt(conn: psycopg.Connection[Any], clock: Clock, migrations: Sequence[Migration]) -> tuple[Migration, ...]:
    """Record the migrations a database without records already has: those up to the first
    version whose schema equals its catalog. An empty database has none; a database equal to no
    version is refused with what separates it from the closest one."""
    live = describe(conn, live_schema(conn))
    if not live:
        return ()
    versions = scratch_catalogs(conn, [m.sql for m in migrations])
    equal = [index for index, catalog in enumerate(versions) if catalog == live]
    if not equal:
        closest = min(range(len(versions)), key=lambda index: len(differences(versions[index], live)))
        raise MigrationError(
            f"the database has tables but no migration records, and its schema is no version of this build; "
            f"the closest is {migrations[closest].label}, which it differs from by:\n  "
            + "\n  ".join(differences(versions[closest], live))
            + "\nchange the database by hand to match that version (docs/migrations.md, \"Adopting\"), "
              "then run `paygate db migrate` again")
    # The first version it equals: a later one with the same catalog changed only data (a backfill),
    # which a database that never ran it still needs.
    adopted = tuple(migrations[:min(equal) + 1])
    with conn.transaction():
        for migration in adopted:
            _record(conn, migration, "adopted", clock.now())
    return adopted


def _record(conn: psycopg.Connection[Any], migration: Migration, method: str, now: datetime) -> None:
    conn.execute(_SQL["record"], {"version": migration.version, "name": migration.name,
                                  "checksum": migration.checksum, "method": method, "now": now})


def _records(conn: psycopg.Connection[Any]) -> list[Record]:
    present = conn.execute(_SQL["records_exist"]).fetchone()
    if not present or not present[0]:
        return []
    return [Record(*row) for row in conn.execute(_SQL["records"]).fetchall()]


def status(url: str, migrations: Sequence[Migration] | None = None) -> Status:
    """The database's standing against this build's migrations; reads only (``paygate db check``)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return status_of(shipped() if migrations is None else migrations, _records(conn))


def _describe_changed(state: Status) -> str:
    return "\n".join(f"migration {m.label} changed since it was applied: recorded sha256 {r.checksum}, "
                     f"the file now has {m.checksum}" for m, r in state.changed)


async def require_current(db: Database) -> Status:
    """The start-up check of every process (web, worker, clock): refuse a database that lacks a
    migration of this build; warn about drift; accept migrations of a newer build."""
    present = await db.fetch_one(_SQL["records_exist"])
    rows = await db.fetch_all(_SQL["records"]) if present and present["present"] else []
    state = status_of(shipped(), [Record(**row) for row in rows])
    if state.pending:
        message = ("the database lacks migrations this build needs: " + ", ".join(m.label for m in state.pending)
                   + "; run `paygate db migrate` with this build before starting its processes (docs/migrations.md)")
        log.error("schema_not_current", detail=message)
        raise SchemaNotCurrent(message)
    if state.changed:
        log.warning("schema_migration_changed", detail=_describe_changed(state))
    if state.newer:
        log.info("schema_newer_than_build", migrations=[r.label for r in state.newer])
    return state


async def open_current(url: str, *, size: int, name: str) -> Database:
    """A pool on a database that has every migration of this build (:func:`require_current`);
    closed again, and :class:`SchemaNotCurrent` raised, when it has not."""
    db = await Database.open(url, size=size, name=name)
    try:
        await require_current(db)
    except BaseException:
        await db.close()
        raise
    return db
