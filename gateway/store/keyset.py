"""A list's named SQL block bound for both orders of its keyset (docs/decisions/0036).

A list query is written once, next to its aggregate, with two ``psycopg.sql`` slots: ``{beyond}``
in the cursor condition, ``(time, id) {beyond} (%(cursor_at)s, %(cursor_id)s)``, and
``{direction}`` after each ORDER BY column. They are bound here to ``>``/``ASC`` and
``<``/``DESC``, never from caller text, so each order is an ordinary statement that walks the
list's ``(time, id)`` index forwards or backwards. :func:`page_params` gives the cursor and the
row count (one more than the page, to tell whether a next page exists).
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from gateway.domain.paging import ORDERS, Order, PageRequest, fetch_size

_BOUND = {"asc": (">", "ASC"), "desc": ("<", "DESC")}
# The parameters of a lookup of one row by id through a list's statement: no cursor, one row.
FIRST_ROW: dict[str, Any] = {"cursor_at": None, "cursor_id": None, "limit": 1}


def directed(text: str) -> dict[Order, sql.Composed]:
    """``text`` with its ``{beyond}`` and ``{direction}`` slots bound for each order."""
    return {order: sql.SQL(text).format(beyond=sql.SQL(_BOUND[order][0]), direction=sql.SQL(_BOUND[order][1]))
            for order in ORDERS}


def page_params(page: PageRequest) -> dict[str, Any]:
    """The named parameters of a page: the cursor's key (both NULL for the first page) and the
    number of rows to fetch."""
    return {"cursor_at": page.cursor.at if page.cursor else None,
            "cursor_id": page.cursor.id if page.cursor else None,
            "limit": fetch_size(page)}
