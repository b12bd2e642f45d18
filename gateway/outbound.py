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

Pools: one aiohttp session, so one bounded keep-alive pool, per *pool name* a request carries in
its ``paygate_pool`` extension (:func:`pool`): a provider account's calls
(gateway.providers.calls) and each outbox sink's deliveries (gateway.outbox.delivery) name their
own, so two accounts on one origin (two Stripe accounts on api.stripe.com) never share connections,
and one sink's deliveries never wait behind another's. A request naming none uses the unnamed pool.
Every pool is closed with the transport, that is with the process's client. Other transports
(httpx's own, MockTransport, respx) ignore the extension.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx

# At most this many connections per pool (and, within it, per origin), kept alive between calls.
CONNECTIONS_PER_POOL = 100
KEEPALIVE_S = 30.0
# The request extension naming the pool a request is sent from.
POOL = "paygate_pool"


# What aiohttp would add on its own and httpx's requests do not carry.
_SKIPPED = ("User-Agent", "Accept-Encoding")


def pool(*name: str) -> dict[str, str]:
    """The extensions of a request sent from the pool ``name`` (its parts joined by ``:``), e.g.
    ``pool("provider", account.id)`` or ``pool("sink", "merchant")``."""
    return {POOL: ":".join(name)}


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


def _headers(raw: tuple[tuple[bytes, bytes], ...]) -> httpx.Headers:
    """An answer's headers as httpx reads them, their encoding found once (ascii, else utf-8, else
    iso-8859-1, as ``httpx.Headers.encoding`` would): left unset, httpx finds it again over every
    header at every lookup."""
    encoding = "ascii"
    if not all(key.isascii() and value.isascii() for key, value in raw):
        try:
            for key, value in raw:
                key.decode("utf-8")
                value.decode("utf-8")
            encoding = "utf-8"
        except UnicodeDecodeError:
            encoding = "iso-8859-1"
    return httpx.Headers(list(raw), encoding=encoding)


@dataclass(frozen=True, slots=True)
class _Read:
    """What aiohttp read of one answer, before a caller shapes it."""

    status: int
    reason: str | None
    headers: Mapping[str, str]
    raw_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete answer, as the provider adapters read it: its status, its headers (looked up
    case-insensitively) and its whole body, decoded from any Content-Encoding as httpx decodes it."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    @classmethod
    def of(cls, response: httpx.Response) -> Answer:
        """``response``, read to its end by httpx's client, as an answer."""
        return cls(response.status_code, response.headers, response.content)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests over aiohttp sessions: one bounded keep-alive pool per pool name (see the
    module docstring), each opened in the running event loop at its first request and all closed
    with the client."""

    def __init__(self, *, verify: ssl.SSLContext | None = None, connections: int = CONNECTIONS_PER_POOL) -> None:
        self._ssl = verify if verify is not None else httpx.create_ssl_context()
        self._connections = connections
        self._sessions: dict[str, aiohttp.ClientSession] = {}

    def _open(self, name: str) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=self._connections, ssl=self._ssl,
                                         keepalive_timeout=KEEPALIVE_S)
        # No cookies kept, no proxies from the environment, nothing decompressed (httpx decodes).
        session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                        auto_decompress=False, trust_env=False,
                                        timeout=aiohttp.ClientTimeout(total=None))
        self._sessions[name] = session
        return session

    @property
    def pools(self) -> tuple[str, ...]:
        """The names of the pools open, in the order they opened."""
        return tuple(self._sessions)

    async def _send(self, method: str, url: str, headers: Any, content: bytes | None,
                    pool_name: str) -> _Read:
        """The one way every call goes out: from the pool ``pool_name``, sent once (no redirects, no
        auto headers beyond the caller's) and its answer read to its end, so the connection stays
        alive. aiohttp's errors are the caller's to name (:func:`_raised`)."""
        session = self._sessions.get(pool_name) or self._open(pool_name)
        async with session.request(method, url, headers=headers, data=content or None, allow_redirects=False,
                                   skip_auto_headers=_SKIPPED) as answer:
            return _Read(answer.status, answer.reason, answer.headers, answer.raw_headers, await answer.read())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            read = await self._send(request.method, str(request.url), request.headers.multi_items(),
                                    request.content, request.extensions.get(POOL, ""))
        except aiohttp.ClientError as error:
            raise _raised(error) from error
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if read.reason:
            extensions["reason_phrase"] = read.reason.encode("latin-1", "replace")
        return httpx.Response(read.status, headers=_headers(read.raw_headers), content=read.body, request=request,
                              extensions=extensions)

    async def exchange(self, method: str, url: str, headers: Mapping[str, str], content: bytes | None,
                       pool_name: str = "") -> Answer:
        """Send ``method`` to ``url`` from the pool ``pool_name`` with exactly ``headers`` and
        ``content`` and read the answer to its end, without building httpx's request and response
        (about a third of a provider call's CPU through httpx's client): the provider calls'
        (gateway.providers.calls). Sent and read as :meth:`handle_async_request` sends and reads,
        failing with the same httpx errors; an encoded body is decoded through httpx's response,
        so a body that does not decode raises ``httpx.DecodingError`` as it does there."""
        try:
            read = await self._send(method, url, headers, content, pool_name)
        except aiohttp.InvalidURL as error:  # as httpx: a call that cannot be made is not a transport failure
            raise httpx.InvalidURL(str(error)) from error
        except aiohttp.ClientError as error:
            raise _raised(error) from error
        if read.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
            return Answer.of(httpx.Response(read.status, headers=_headers(read.raw_headers), content=read.body))
        return Answer(read.status, read.headers, read.body)

    async def status(self, url: str, content: bytes, headers: dict[str, str], pool_name: str = "") -> int:
        """POST ``content`` to ``url`` from the pool ``pool_name`` and read the answer to its end:
        its status code, for a caller that needs nothing else (the outbox's deliveries), without
        building httpx's request and response (a third of a delivery's CPU). Sent and read as
        :meth:`handle_async_request` sends and reads, failing with the same httpx errors."""
        try:
            return (await self._send("POST", url, headers, content, pool_name)).status
        except aiohttp.ClientError as error:
            raise _raised(error) from error

    async def aclose(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()


class OutboundClient(httpx.AsyncClient):
    """httpx's client keeping no cookies, as the transport keeps none (aiohttp's DummyCookieJar): a
    provider's Set-Cookie is never read, let alone sent back on a later call. httpx's client reads
    every answer's cookies into its jar otherwise, ~7% of a recovery pass's CPU."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._none = _NoCookies()
        transport = kwargs.get("transport")
        # The process's transport, which provider calls use directly (gateway.providers.calls);
        # None under any other (the tests'), which they use through this client.
        self.direct = transport if isinstance(transport, AiohttpTransport) else None

    @property
    def cookies(self) -> httpx.Cookies:
        return self._none

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("an outbound client keeps no cookies")


class _NoCookies(httpx.Cookies):
    """An empty jar that takes nothing from an answer."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


def outbound_client(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The process's client for provider calls: ``transport`` when one is injected (the tests'),
    else :class:`AiohttpTransport`. No client-side timeout, no redirects and no cookies: budgets on
    the injected clock cut calls off, and only the checkout flow and recovery decide when a request
    goes out (seed 004)."""
    return OutboundClient(transport=transport if transport is not None else AiohttpTransport(),
                          timeout=httpx.Timeout(None), follow_redirects=False)
