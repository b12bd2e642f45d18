"""The named-SQL loader (STYLE, example 1)."""

from __future__ import annotations

import pytest

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
