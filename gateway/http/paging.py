"""Link-header paging, the one convention of every list endpoint (docs/decisions/0036).

The body stays a JSON array. Every list accepts ``limit`` (1 to 1000, default 100), ``order``
(``asc``, oldest first, the default; ``desc``, newest first) and ``cursor`` (an opaque token the
list gave); a bad one is 422 ``request.invalid`` whose field errors name it (API.md). Whenever
more rows exist beyond the page, the response carries an RFC 8288
``Link: </v1/...?...&cursor=...>; rel="next"`` header: a root-relative URL repeating the
request's own query (its filters, ``limit`` and ``order``) with the cursor of the page's last
row. The last page has no ``Link`` header. A client follows ``rel="next"`` until it is absent.

:func:`listing` builds such an endpoint from the list's role, filter model, :class:`Keyset`, a
fetch of ``page.limit + 1`` rows (gateway/store/keyset.py) and a renderer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.auth.tokens import Role
from gateway.domain.paging import Cursor, Keyset, PageRequest, cut, read_page, write_cursor
from gateway.http.auth import require
from gateway.http.query import parse_query
from gateway.services import Services

PARAMETERS = ("limit", "order", "cursor")

Filters = TypeVar("Filters", bound=BaseModel)
Row = dict[str, Any]
Endpoint = Callable[[Request], Awaitable[JSONResponse]]
Fetch = Callable[[Services, Filters, PageRequest], Awaitable[Sequence[Row]]]


def page_request(request: Request, keyset: Keyset) -> PageRequest:
    """The page the request asks for; 400 ``page.*_invalid`` for a bad ``limit``, ``order`` or ``cursor``."""
    query = request.query_params
    return read_page(keyset, limit=query.get("limit"), order=query.get("order"), cursor=query.get("cursor"))


def next_link(request: Request, keyset: Keyset, page: PageRequest, cursor: Cursor) -> str:
    """The ``Link`` header value whose ``rel="next"`` URL fetches the page beyond ``cursor`` with
    the request's own filters, limit and order (RFC 8288: ``<URI-Reference>; rel="next"``)."""
    kept = [(name, value) for name, value in request.query_params.multi_items() if name not in PARAMETERS]
    query = urlencode([*kept, ("limit", str(page.limit)), ("order", page.order),
                       ("cursor", write_cursor(keyset, page.order, cursor))])
    return f'<{request.url.path}?{query}>; rel="next"'


def page_response(request: Request, keyset: Keyset, page: PageRequest, rows: Sequence[Row],
                  render: Callable[[Row], Row]) -> JSONResponse:
    """The page of ``rows`` (fetched one beyond the limit) as a JSON array, with ``Link`` when more exist."""
    shown, following = cut(keyset, page, rows)
    headers = {"Link": next_link(request, keyset, page, following)} if following else None
    return JSONResponse([render(row) for row in shown], headers=headers)


def listing(role: Role, filters: type[Filters], keyset: Keyset, fetch: Fetch[Filters],
            render: Callable[[Row], Row]) -> Endpoint:
    """``GET`` a list for callers holding ``role``: the validated filters (422 ``request.invalid``
    as for any query), the page, the rows ``fetch`` finds, rendered, as a JSON array."""

    async def endpoint(request: Request) -> JSONResponse:
        await require(request, role)
        page = page_request(request, keyset)
        query = parse_query(request, filters, leave=PARAMETERS)
        services: Services = request.app.state.services
        return page_response(request, keyset, page, await fetch(services, query, page), render)

    return endpoint
