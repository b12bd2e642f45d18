"""Answers the gateway cannot read (seed 004: "incomplete or unreadable responses
-> Unknown"): CardCo takes the request's effect as usual, then what reaches the gateway's HTTP
client is ruined on the way back. Installed on the in-process CardCo route (``cardco_http``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import respx


def undecodable(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    """The answer claims gzip but its bytes are not: httpx raises ``DecodingError`` reading it."""
    return httpx.Response(response.status_code, headers={"content-encoding": "gzip"},
                          stream=httpx.ByteStream(b"\x00not gzip at all"), request=request)


def cut_off(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    """The peer closes the connection mid-answer: ``RemoteProtocolError``."""
    raise httpx.RemoteProtocolError("peer closed connection without sending complete message body",
                                    request=request)


RUINS = {"undecodable": undecodable, "cut-off": cut_off}


def ruin_answers(router: respx.MockRouter, method: str, path: Callable[[str], bool],
                 ruin: Callable[[httpx.Request, httpx.Response], httpx.Response]) -> None:
    """Every ``method`` request whose path satisfies ``path`` reaches CardCo; its answer is ``ruin``ed."""
    [route] = list(router.routes)  # the CardCo mount (provider_fake.inprocess.mount)
    served: Callable[[httpx.Request], Awaitable[httpx.Response]] = route.side_effect  # type: ignore[assignment]

    async def side_effect(request: httpx.Request) -> httpx.Response:
        response = await served(request)
        if request.method == method and path(request.url.path):
            return ruin(request, response)
        return response

    route.side_effect = side_effect
