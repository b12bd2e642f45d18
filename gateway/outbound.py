"""The transport under paygate's outbound httpx clients: aiohttp's HTTP/1.1 connection pool behind
httpx's request and response types (docs/decisions/0077).

httpx stays the interface (``httpx.AsyncClient``, ``httpx.Request``, ``httpx.Response``), so the
callers, respx and httpx's ``MockTransport`` in the tests are unchanged: a test injects its own
transport where the process would build this one. What this transport replaces is httpcore, h11
and anyio on the path of every call, about 1 ms of CPU per request on this machine.

A call is sent once (no retries, no redirects, no client timeouts: the callers' budgets on the
injected clock cut calls off by cancelling them) and its whole body is read before the response is
returned, as httpx's default send does, so a truncated answer fails here. Every way aiohttp ends a
call without a complete answer is raised as the httpx error that names the same failure, so the
reason a provider call records (gateway.providers.answers) reads as it did under httpcore:
``ConnectError`` (refused, unreachable, TLS), ``RemoteProtocolError`` (the peer closed the
connection or broke HTTP, mid-response included), ``ReadError`` (a reset or another socket error
while waiting), ``TransportError`` for anything else aiohttp raises.
"""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import httpx

# At most this many connections per origin (scheme, host, port), kept alive between calls.
CONNECTIONS_PER_ORIGIN = 100
KEEPALIVE_S = 30.0


def _raised(error: aiohttp.ClientError) -> httpx.TransportError:
    """The httpx error naming what ``error`` says happened."""
    message = str(error) or type(error).__name__
    if isinstance(error, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message)
    if isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError)):
        return httpx.RemoteProtocolError(message)
    if isinstance(error, aiohttp.ClientOSError):
        return httpx.ReadError(message)
    return httpx.TransportError(message)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests over one aiohttp session: one keep-alive pool per origin, opened in the
    running event loop at the first request and closed with the client."""

    def __init__(self, *, verify: ssl.SSLContext | None = None, connections: int = CONNECTIONS_PER_ORIGIN) -> None:
        self._ssl = verify if verify is not None else httpx.create_ssl_context()
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=self._connections, ssl=self._ssl,
                                         keepalive_timeout=KEEPALIVE_S)
        # No cookies kept, no proxies from the environment, nothing decompressed (httpx decodes).
        self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                              auto_decompress=False, trust_env=False,
                                              timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or self._open()
        body: Any = request.content or None
        try:
            async with session.request(request.method, str(request.url), headers=request.headers.multi_items(),
                                       data=body, allow_redirects=False, skip_auto_headers=("User-Agent",
                                                                                            "Accept-Encoding")) \
                    as answer:
                content = await answer.read()
                status, headers, reason = answer.status, answer.raw_headers, answer.reason
        except aiohttp.ClientError as error:
            raise _raised(error) from error
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if reason:
            extensions["reason_phrase"] = reason.encode("latin-1", "replace")
        return httpx.Response(status, headers=list(headers), content=content, request=request, extensions=extensions)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def outbound_client(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The process's client for provider calls: ``transport`` when one is injected (the tests'),
    else :class:`AiohttpTransport`. No client-side timeout and no redirects: budgets on the
    injected clock cut calls off, and only the checkout flow and recovery decide when a request
    goes out (seed 004)."""
    return httpx.AsyncClient(transport=transport or AiohttpTransport(), timeout=httpx.Timeout(None),
                             follow_redirects=False)
