"""``schema.sql``, the whole schema in one readable file, and ``paygate db check``'s comparison
of a live database with it.

Databases get their schema from the migrations (:mod:`gateway.store.migrate`); a test proves the
migrations yield exactly this file's catalog. :func:`check_schema` applies the file in a scratch
schema of a transaction that is always rolled back and compares the catalogs
(:mod:`gateway.store.catalog`), so it needs no second database and changes nothing.
"""

from __future__ import annotations

from importlib import resources

import psycopg

from gateway.store.catalog import describe, differences, live_schema, scratch_catalogs


def schema_sql() -> str:
    """The text of ``schema.sql`` as shipped with the package."""
    return resources.files("gateway.store").joinpath("schema.sql").read_text(encoding="utf-8")


def check_schema(url: str) -> list[str]:
    """Every difference between the database at ``url`` and ``schema.sql``; empty when they match."""
    with psycopg.connect(url, autocommit=True) as conn:
        live = describe(conn, live_schema(conn))
        [expected] = scratch_catalogs(conn, [schema_sql()])
    return differences(expected, live)
