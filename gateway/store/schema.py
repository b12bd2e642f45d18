"""Applying and checking ``schema.sql`` (``paygate db init`` / ``paygate db check``).

``init`` runs the whole file in one transaction under an advisory lock, so two processes that
start together cannot interleave their DDL; every statement is idempotent. ``check`` applies the
file inside a scratch schema of a transaction that is always rolled back, describes both that
schema and the live one from the catalog (columns, constraints, indexes, triggers, functions)
and reports every difference, so it needs no second database and changes nothing.
"""

from __future__ import annotations

from importlib import resources

import psycopg
from psycopg import sql

SCHEMA_LOCK = 0x70_61_79_67  # 'payg': the advisory lock held while the schema is applied
SCRATCH_SCHEMA = "paygate_schema_check"

_DESCRIBE = """
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || COALESCE(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
       || CASE WHEN a.attidentity <> '' THEN ' identity' ELSE '' END AS item
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid AND c.relkind = 'r'
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = %(schema)s::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || c.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
 WHERE c.relnamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relnamespace = %(schema)s::regnamespace
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = %(schema)s::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'function ' || p.proname || ' ' || md5(p.prosrc)
  FROM pg_proc p
 WHERE p.pronamespace = %(schema)s::regnamespace
"""


def schema_sql() -> str:
    """The text of ``schema.sql`` as shipped with the package."""
    return resources.files("gateway.store").joinpath("schema.sql").read_text(encoding="utf-8")


def init_schema(url: str) -> None:
    """Apply ``schema.sql`` idempotently, serialized across processes by an advisory lock."""
    with psycopg.connect(url) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(schema_sql())  # type: ignore[arg-type]  # a trusted, shipped file


def _describe(conn: psycopg.Connection, schema: str) -> set[str]:
    rows = conn.execute(_DESCRIBE, {"schema": schema}).fetchall()
    # Definitions name their schema only when it is not first on the search path; normalize.
    return {str(row[0]).replace(f"{schema}.", "") for row in rows}


def check_schema(url: str) -> list[str]:
    """Every difference between the database at ``url`` and ``schema.sql``; empty when they match."""
    with psycopg.connect(url) as conn:
        current_schema = conn.execute("SELECT current_schema()").fetchone()
        live_schema = str(current_schema[0]) if current_schema and current_schema[0] else "public"
        live = _describe(conn, live_schema)
        conn.rollback()
        try:
            with conn.transaction():
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCRATCH_SCHEMA)))
                conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(SCRATCH_SCHEMA)))
                conn.execute(schema_sql())  # type: ignore[arg-type]
                expected = _describe(conn, SCRATCH_SCHEMA)
                raise _Rollback
        except _Rollback:
            pass
    missing = [f"missing: {item}" for item in sorted(expected - live)]
    unexpected = [f"unexpected: {item}" for item in sorted(live - expected)]
    return missing + unexpected


class _Rollback(Exception):
    """Leaves the scratch schema's transaction without committing it."""
