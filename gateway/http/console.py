"""The operator console under ``/console/`` (API.md "Operations"; "Authentication": its sign-in page
needs no token). Static files shipped in ``gateway/console/`` as package data; the page signs in
with an operator token kept in the browser tab and calls the ``/v1/ops/`` API with it, so these
files hold nothing secret. Every answer carries a strict Content-Security-Policy: scripts, styles
and API calls from this origin only, no inline code, no framing.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS = [
    (b"content-security-policy", (b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                  b"img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    # Small files that change with each release: revalidate rather than run a stale console.
    (b"cache-control", b"no-cache"),
]


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def routes() -> list[BaseRoute]:
    files = StaticFiles(packages=[("gateway", "console")], html=True)
    return [Mount("/console", app=SecurityHeaders(files), name="console")]
