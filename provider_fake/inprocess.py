"""CardCo in-process: httpx calls routed into the same ASGI app, through respx or a transport.

API.md "provider_fake: CardCo": runs in-process for tests. `CardCoTransport` is a minimal ASGI
client; it plays a caller that gives up as soon as the request is sent and no answer is being
produced. So when the app drops a response (`drop_response` after its effect,
`timeout_before_effect` before any) it sees the disconnect at once, answers nothing, and the
caller gets `httpx.ReadTimeout`: the same failure a lost response causes over the network,
without waiting for a deadline.

    router = respx.mock(assert_all_called=False)
    mount(router, fake, "http://cardco.test")
"""

from __future__ import annotations

from typing import Any

import httpx
import respx
from starlette.types import ASGIApp, Message

from provider_fake.app import create_app
from provider_fake.fake import CardCo


class CardCoTransport(httpx.AsyncBaseTransport):
    """An httpx transport that serves requests from an ASGI app (normally CardCo's)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        received = False
        started: Message | None = None
        chunks: list[bytes] = []
        complete = False

        async def receive() -> Message:
            nonlocal received
            if received:
                return {"type": "http.disconnect"}
            received = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Message) -> None:
            nonlocal started, complete
            if message["type"] == "http.response.start":
                started = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                complete = not message.get("more_body", False)

        await self.app(_scope(request), receive, send)
        if started is None:
            raise httpx.ReadTimeout("CardCo never answered: the response was dropped", request=request)
        if not complete:
            raise httpx.RemoteProtocolError("CardCo closed the connection mid-response", request=request)
        return httpx.Response(
            started["status"], headers=started.get("headers", []), content=b"".join(chunks), request=request
        )


def _scope(request: httpx.Request) -> dict[str, Any]:
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": url.scheme,
        "path": url.path,
        "raw_path": url.raw_path.split(b"?")[0],
        "query_string": url.query,
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.headers.raw],
        "client": ("127.0.0.1", 50000),
        "server": (url.host, port),
    }


def mount(router: respx.MockRouter, fake: CardCo, base_url: str) -> respx.Route:
    """Route every httpx call under `base_url` to `fake` through its ASGI app."""
    transport = CardCoTransport(create_app(fake))
    return router.route(url__startswith=base_url).mock(side_effect=transport.handle_async_request)
