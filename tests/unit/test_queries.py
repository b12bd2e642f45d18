"""The named-SQL loader (STYLE, example 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS

from gateway.store.queries import load_queries, parse_queries


def test_blocks_are_split_by_name_and_keep_their_comments() -> None:
    queries = parse_queries("-- file comment\n-- name: first\n-- why\nSELECT 1;\n\n-- name: second\nSELECT %(now)s;\n")
    assert queries == {"first": "-- why\nSELECT 1;", "second": "SELECT %(now)s;"}


def test_a_name_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_an_empty_block_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        parse_queries("-- name: a\n\n-- name: b\nSELECT 1;")


def test_shipped_files_load() -> None:
    assert {"insert_token", "find_principal"} <= load_queries("gateway.auth").keys()


def test_every_named_statement_fits_psycopg_s_query_cache() -> None:
    """Docs/decisions/0048: psycopg converts a statement's ``%(name)s`` placeholders once
    and caches the result only for statements up to MAX_CACHED_STATEMENT_LENGTH characters and
    MAX_CACHED_STATEMENT_PARAMS parameters; a longer one is parsed again on every execution (about
    1 ms of CPU for the evidence writes' statement, more than the rest of a notification's SQL).
    Every block in every .sql file of the gateway, comments included, stays within both."""
    root = Path(__file__).resolve().parents[2] / "gateway"
    too_long = {f"{path.relative_to(root)}:{name}": (len(sql), len(set(re.findall(r"%\((\w+)\)s", sql))))
                for path in root.rglob("*.sql") if "migrations" not in path.parts and path.name != "schema.sql"
                for name, sql in parse_queries(path.read_text()).items()
                if len(sql) > MAX_CACHED_STATEMENT_LENGTH
                or len(set(re.findall(r"%\((\w+)\)s", sql))) > MAX_CACHED_STATEMENT_PARAMS}
    assert too_long == {}


def test_the_evidence_lock_is_one_statement_and_its_compositions_fit_the_cache() -> None:
    """docs/decisions/0049: a payment notification takes its evidence locks in the statement that
    records it, and Attempts.apply_evidence takes the same ones alone; both are the one
    ``lock_for_evidence`` template (seed 004, "Cancellation goes through the same lock": the order
    row, then the attempt row), and each composed statement stays within psycopg's query cache."""
    from gateway.notifications.repository import IDENTIFY_AND_RECORD
    from gateway.payments.evidence_lock import LOCK_FOR_EVIDENCE, lock_for_evidence

    embedded = lock_for_evidence("(SELECT attempt_id FROM recorded)", commented=False)
    assert embedded in IDENTIFY_AND_RECORD
    assert LOCK_FOR_EVIDENCE.endswith(lock_for_evidence("%(attempt_id)s", commented=False))
    for statement in (IDENTIFY_AND_RECORD, LOCK_FOR_EVIDENCE):
        assert "{" not in statement and len(statement) <= MAX_CACHED_STATEMENT_LENGTH
        assert len(set(re.findall(r"%\((\w+)\)s", statement))) <= MAX_CACHED_STATEMENT_PARAMS
