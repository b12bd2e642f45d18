"""The SQL the product sends, statement by statement, as its code hands it to psycopg (the named
SQL text, parameters still named), observed while it runs against the real database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from gateway.store.queries import parse_queries

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def recorded_statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement an async cursor executes while this is open, in the order executed, the
    driver's own savepoints included; each still runs as it would."""
    seen: list[str] = []
    execute = psycopg.AsyncCursor.execute

    async def recording(self: psycopg.AsyncCursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        seen.append(query.as_string(self) if isinstance(query, sql.Composable) else
                    query.decode() if isinstance(query, bytes) else str(query))
        return await execute(self, query, params, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.AsyncCursor, "execute", recording)
        yield seen


def catalogue(*composed: tuple[str, str]) -> dict[str, str]:
    """Every named SQL block of the gateway by its text, ``path name``, and the ``composed``
    statements (name, text) the repositories build from them."""
    named = {text: name for name, text in composed}
    for path in sorted(ROOT.glob("gateway/**/*.sql")):
        for name, text in parse_queries(path.read_text()).items():
            named.setdefault(text, f"{path.relative_to(ROOT)} {name}")
    return named


def names(recorded: list[str], known: dict[str, str]) -> list[str]:
    """The recorded statements by name; a statement of no named block by its first line."""
    return [known.get(text, text if "\n" not in text else f"unnamed: {text.splitlines()[0]}") for text in recorded]
