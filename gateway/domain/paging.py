"""The one paging convention of every list endpoint (docs/decisions/0036).

A list is ordered by a key of two columns, a time and the row's id (:class:`Keyset`); the id
breaks ties between rows stamped at the same instant, so the order is total. A page is at most
``limit`` rows strictly beyond a cursor in the chosen order (``asc``: oldest first, the default;
``desc``: newest first). The cursor is the key of the last row a page showed, written as an opaque
token that also names its list and order, so a token of another list or order is refused instead
of silently restarting or skipping. Nothing here pages by position (no OFFSET): a row inserted
during a walk neither moves nor repeats the rows around the cursor.

Pure: parsing the caller's ``limit``, ``order`` and ``cursor`` text, writing and reading tokens,
and cutting a fetched batch into a page and the cursor of the next one.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from gateway.domain.errors import RequestInvalid

Order = Literal["asc", "desc"]
ORDERS: tuple[Order, ...] = ("asc", "desc")
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
Key = int | uuid.UUID | str  # an identity column, a uuid, or a text id (a payout's)


@dataclass(frozen=True)
class Keyset:
    """How one list is ordered: ``(time, id)`` read from a row's ``time`` and ``id`` columns.

    ``name`` is written into every cursor of the list; ``read_id`` turns the cursor's id text back
    into the id's type (``int`` for identity columns, ``uuid.UUID``, or a checked ``str``), refusing
    anything else with ``ValueError``."""

    name: str
    time: str
    id: str
    read_id: Callable[[str], Key]


@dataclass(frozen=True)
class Cursor:
    """The key of the last row a page showed: the next page starts strictly beyond it."""

    at: datetime
    id: Key



def _invalid(parameter: str, message: str) -> RequestInvalid:
    """A bad paging parameter is a query error like any other (API.md: 422 ``request.invalid`` with
    the field errors), naming the parameter, so a client can tell a stale cursor from a bad filter."""
    return RequestInvalid(message, errors=[{"field": parameter, "message": message}])

@dataclass(frozen=True)
class PageRequest:
    limit: int
    order: Order
    cursor: Cursor | None


def parse_limit(text: str | None) -> int:
    """``limit``: a whole number from 1 to :data:`MAX_LIMIT`; absent means :data:`DEFAULT_LIMIT`."""
    if text is None:
        return DEFAULT_LIMIT
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_LIMIT:
        raise _invalid("limit", f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def parse_order(text: str | None) -> Order:
    """``order``: ``asc`` (oldest first, the default) or ``desc`` (newest first)."""
    if text is None:
        return "asc"
    for order in ORDERS:
        if text == order:
            return order
    raise _invalid("order", "order must be asc or desc")


def write_cursor(keyset: Keyset, order: Order, cursor: Cursor) -> str:
    """The opaque token of ``cursor`` in ``keyset``'s list walked in ``order`` (URL-safe base64)."""
    text = f"{keyset.name}|{order}|{cursor.at.isoformat()}|{cursor.id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def read_cursor(keyset: Keyset, order: Order, token: str) -> Cursor:
    """The cursor a token of :func:`write_cursor` holds; 422 ``request.invalid`` (field ``cursor``) for a token
    that is damaged or belongs to another list or order."""
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        name, written_order, at, key = text.split("|")
        if (name, written_order) != (keyset.name, order):
            raise ValueError("another list or order")
        cursor = Cursor(datetime.fromisoformat(at), keyset.read_id(key))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _invalid("cursor", "the cursor is not one this list gave for this order; start again without it") \
            from None
    if cursor.at.tzinfo is None:
        raise _invalid("cursor", "the cursor is not one this list gave; start again without it")
    return cursor


def read_page(keyset: Keyset, *, limit: str | None, order: str | None, cursor: str | None) -> PageRequest:
    """The page a caller asks for, from the text of its ``limit``, ``order`` and ``cursor``."""
    chosen = parse_order(order)
    return PageRequest(parse_limit(limit), chosen, None if cursor is None else read_cursor(keyset, chosen, cursor))


Row = Mapping[str, Any]
R = TypeVar("R", bound=Row)


def cut(keyset: Keyset, page: PageRequest, rows: Sequence[R]) -> tuple[Sequence[R], Cursor | None]:
    """``rows`` fetched with ``limit + 1`` (:func:`fetch_size`): the page, and the cursor of the
    next page when the extra row shows that more exist (None on the last page)."""
    if len(rows) <= page.limit:
        return rows, None
    shown = rows[:page.limit]
    last = shown[-1]
    return shown, Cursor(last[keyset.time], last[keyset.id])


def fetch_size(page: PageRequest) -> int:
    """One row more than the page holds: whether it comes back says whether a next page exists."""
    return page.limit + 1
