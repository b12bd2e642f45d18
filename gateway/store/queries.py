"""Named SQL blocks, kept in ``.sql`` files next to the aggregate they serve (STYLE, example 1).

A file holds blocks that each start with a ``-- name: <query_name>`` line; comments inside a block
stay in the SQL, so the why travels with the statement. Parameters are psycopg's named
placeholders, ``%(now)s``; every statement that compares or stamps time receives ``%(now)s`` from
the injected clock and never calls ``now()`` itself (seed 004: one clock).
"""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(?P<name>[a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split ``text`` into ``{name: sql}``; text before the first name line is a file comment."""
    matches = list(_NAME.finditer(text))
    queries: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        name = match.group("name")
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        sql = text[match.end():end].strip()
        if not sql:
            raise ValueError(f"query {name!r} is empty")
        queries[name] = sql
    return queries


def load_queries(package: str, filename: str = "queries.sql") -> dict[str, str]:
    """Load and parse a package's ``.sql`` file once, at import time of its repository module."""
    return parse_queries(resources.files(package).joinpath(filename).read_text(encoding="utf-8"))
