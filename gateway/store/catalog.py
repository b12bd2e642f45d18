"""A schema as the catalog describes it, and the differences between two (``catalog.sql``).

A :data:`Catalog` maps an item (``"constraint orders.ck_order_state"``) to its definition as the
server deparses it. :func:`differences` says, one readable line per item, what is missing, what
is unexpected and what is defined differently. :func:`scratch_catalogs` applies SQL scripts in
a scratch schema of a transaction that is always rolled back and describes the result after each
script, so comparing a live database with ``schema.sql`` or with the migrations' versions needs
no second database and changes nothing (``paygate db check``; adoption in
:mod:`gateway.store.migrate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from gateway.store.queries import load_queries

Catalog = dict[str, str]

RECORDS_TABLE = "paygate_schema_migrations"  # the migration runner's own table, not part of the schema
SCRATCH_SCHEMA = "paygate_schema_check"
INVALID = " (INVALID)"  # what ends the definition of an index that pg_index marks not indisvalid

_SQL = load_queries("gateway.store", "catalog.sql")


def describe(conn: psycopg.Connection[Any], schema: str) -> Catalog:
    """Every item of ``schema``, the migration records table left out."""
    rows = conn.execute(_SQL["describe_schema"], {"schema": schema, "records": RECORDS_TABLE,
                                                  "invalid": INVALID}).fetchall()
    # Definitions name their schema only when it is not first on the search path; normalize.
    prefix = f"{schema}."
    return {str(item).replace(prefix, ""): str(definition).replace(prefix, "") for item, definition in rows}


def live_schema(conn: psycopg.Connection[Any]) -> str:
    """The schema unqualified names resolve to on this connection (``public`` by default)."""
    row = conn.execute("SELECT current_schema()").fetchone()
    return str(row[0]) if row and row[0] else "public"


def differences(expected: Catalog, actual: Catalog) -> list[str]:
    """What ``actual`` lacks, has in addition, and defines otherwise than ``expected``; sorted, so
    a report reads table by table. Empty when the two are equal."""
    lines = [f"missing: {item} {expected[item]}" for item in expected.keys() - actual.keys()]
    lines += [f"unexpected: {item} {actual[item]}" for item in actual.keys() - expected.keys()]
    lines += [_invalid(item) if actual[item] == expected[item] + INVALID else
              f"differs: {item}\n      expected: {expected[item]}\n      actual:   {actual[item]}"
              for item in expected.keys() & actual.keys() if expected[item] != actual[item]]
    return sorted(lines, key=lambda line: line.split(" ", 2)[1:])


def _invalid(item: str) -> str:
    """An expected index that exists only as the INVALID leftover of a failed ``CREATE INDEX
    CONCURRENTLY`` (docs/migrations.md): present by name, enforcing and serving nothing."""
    name = item.removeprefix("index ")
    return (f"invalid: {item} is INVALID (a CREATE INDEX CONCURRENTLY that failed left it; queries never use "
            f"it and it guarantees nothing): remove what made it fail (e.g. duplicate rows for a unique index), "
            f"then rebuild it with `REINDEX INDEX CONCURRENTLY {name};` (or `DROP INDEX CONCURRENTLY {name};` "
            f"and create it again)")


class _Rollback(Exception):
    """Leaves the scratch schema's transaction without committing it."""


def scratch_catalogs(conn: psycopg.Connection[Any], scripts: Sequence[str]) -> list[Catalog]:
    """Apply ``scripts`` one after the other in an empty scratch schema and describe it after each;
    the transaction is rolled back, so nothing stays. The scripts must not name a schema."""
    catalogs: list[Catalog] = []
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCRATCH_SCHEMA)))
            conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(SCRATCH_SCHEMA)))
            for script in scripts:
                conn.execute(script.encode())  # trusted, shipped SQL: schema.sql or a migration
                catalogs.append(describe(conn, SCRATCH_SCHEMA))
            raise _Rollback
    except _Rollback:
        pass
    return catalogs
