"""Listing an account's objects by creation time, a page at a time (extension; guide "Listing by
creation time").

`GET /v1/{payments,refunds,payouts,payout_recalls}?created_gte=<RFC 3339>&created_lt=<RFC 3339>`
answers the account's objects of that kind created in [created_gte, created_lt), oldest first
(by creation time, then in the order they were stored), at most `limit` (1..100, default 10) a
page, each with its `created_at`; `{"data": [...], "has_more": bool, "next_cursor": <id> | null}`,
and `starting_after=<next_cursor>` continues after that object. The listing lags like every other
CardCo read: an object still hidden by the visibility delay (or a `not_found_for_s` rule) is left
out, so a listing proves an object absent only once the delay has passed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from provider_fake.clock import rfc3339
from provider_fake.errors import InvalidRequest
from provider_fake.objects import ProviderObject

MAX_LIMIT = 100
DEFAULT_LIMIT = 10


def moment(value: str | None, name: str) -> datetime:
    """An RFC 3339 moment with its offset; 400 `invalid_request` otherwise."""
    try:
        parsed = datetime.fromisoformat(value or "")
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidRequest(f"{name} must be an RFC 3339 time with an offset")
    return parsed.astimezone(UTC)


def limit_of(value: str | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return int(value)


def window_page(objects: Iterable[ProviderObject], query: dict[str, str],
                visible: Callable[[ProviderObject], bool]) -> dict[str, Any]:
    """One page of the window listing described in the module docstring; ``objects`` are the
    account's objects of one kind in the order they were stored."""
    start, end = moment(query.get("created_gte"), "created_gte"), moment(query.get("created_lt"), "created_lt")
    limit = limit_of(query.get("limit"))
    in_window = sorted((obj for obj in objects if start <= obj.created_at < end), key=lambda obj: obj.created_at)
    after = query.get("starting_after")
    if after is not None:
        ids = [obj.id for obj in in_window]
        if after not in ids:
            raise InvalidRequest("starting_after must name an object of this listing")
        in_window = in_window[ids.index(after) + 1:]
    shown = [obj for obj in in_window if visible(obj)]
    page = shown[:limit]
    more = len(shown) > limit
    return {
        "data": [obj.public() | {"created_at": rfc3339(obj.created_at)} for obj in page],
        "has_more": more,
        "next_cursor": page[-1].id if more else None,
    }
