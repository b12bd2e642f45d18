"""The paging convention's pure parts (docs/decisions/0036): the caller's limit and
order, cursors that name their list and order, and a fetched batch cut into a page and the next cursor."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from gateway.domain.errors import RequestInvalid
from gateway.domain.paging import Cursor, Keyset, PageRequest, cut, fetch_size, read_cursor, read_page, write_cursor

ESCALATIONS = Keyset("escalations", "raised_at", "escalation_id", int)
ATTEMPTS = Keyset("attempts", "created_at", "attempt_id", uuid.UUID)
AT = datetime(2026, 11, 29, 16, 0, 0, 123456, tzinfo=UTC)


def test_defaults_are_todays_100_oldest_first() -> None:
    assert read_page(ESCALATIONS, limit=None, order=None, cursor=None) == PageRequest(100, "asc", None)
    assert read_page(ESCALATIONS, limit="1000", order="desc", cursor=None) == PageRequest(1000, "desc", None)


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "1.5", "", " 5", "x", "٣"])
def test_a_limit_outside_1_to_1000_is_refused(limit: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        read_page(ESCALATIONS, limit=limit, order=None, cursor=None)
    assert refused.value.extra["errors"][0]["field"] == "limit"


@pytest.mark.parametrize("order", ["", "ASC", "newest", "asc "])
def test_an_order_other_than_asc_or_desc_is_refused(order: str) -> None:
    with pytest.raises(RequestInvalid) as refused:
        read_page(ESCALATIONS, limit=None, order=order, cursor=None)
    assert refused.value.extra["errors"][0]["field"] == "order"


@pytest.mark.parametrize("keyset, key", [(ESCALATIONS, 42), (ATTEMPTS, uuid.uuid4())])
def test_a_cursor_reads_back_exactly_with_its_microseconds(keyset: Keyset, key: int | uuid.UUID) -> None:
    cursor = Cursor(AT, key)
    token = write_cursor(keyset, "desc", cursor)
    assert token.isascii() and "=" not in token and "|" not in token
    assert read_cursor(keyset, "desc", token) == cursor


def test_a_cursor_is_refused_by_another_list_another_order_or_when_damaged() -> None:
    token = write_cursor(ESCALATIONS, "asc", Cursor(AT, 7))
    for keyset, order, text in [(ATTEMPTS, "asc", token), (ESCALATIONS, "desc", token),
                                (ESCALATIONS, "asc", token[:-3]), (ESCALATIONS, "asc", "%%%"),
                                (ESCALATIONS, "asc", write_cursor(ESCALATIONS, "asc", Cursor(AT.replace(tzinfo=None), 7))),
                                (ATTEMPTS, "asc", write_cursor(ATTEMPTS, "asc", Cursor(AT, 7)))]:
        with pytest.raises(RequestInvalid) as refused:
            read_cursor(keyset, order, text)  # type: ignore[arg-type]
        assert refused.value.extra["errors"][0]["field"] == "cursor"


def test_a_batch_one_longer_than_the_page_yields_the_cursor_of_its_last_shown_row() -> None:
    page = PageRequest(2, "asc", None)
    rows = [{"raised_at": AT + timedelta(seconds=n), "escalation_id": n} for n in range(3)]
    assert fetch_size(page) == 3
    assert cut(ESCALATIONS, page, rows) == (rows[:2], Cursor(AT + timedelta(seconds=1), 1))
    assert cut(ESCALATIONS, page, rows[:2]) == (rows[:2], None)
