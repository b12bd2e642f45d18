"""Provider calls over aiohttp behind httpx's types (gateway/outbound.py, docs/decisions/0077),
against a server served by uvicorn on loopback in this event loop: what a call sends and reads,
the kept-alive connection, and every way a call ends without an answer read as the same httpx error
(so the same Unknown reason, seed 004 "The Payment Client": transport failures and incomplete
responses map to Unknown) as under httpx's own transport."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.clock import SystemClock
from gateway.domain.outcomes import NoResponse, ProviderResponse
from gateway.outbound import AiohttpTransport, Answer, outbound_client
from gateway.providers.answers import Unanswered, answer
from gateway.providers.calls import ProviderCalls
from gateway.settings import ProviderAccount
from paygate_local.servers import free_port
from tests.integration.loopback import request_body, served


class Provider:
    """``/echo`` answers 201 with what it was sent; ``/cookie`` sets a cookie; ``/gzip`` a gzip-encoded document; ``/cut``
    promises 100 bytes, sends 10 and fails (uvicorn closes the connection)."""

    def __init__(self) -> None:
        self.ports: list[int] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await request_body(receive)
        self.ports.append(scope["client"][1])
        headers = {key.decode(): value.decode() for key, value in scope["headers"]}
        if scope["path"] == "/cut":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
            await send({"type": "http.response.body", "body": b"0123456789", "more_body": True})
            raise RuntimeError("the provider went away mid-answer")
        if scope["path"] == "/cookie":
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"set-cookie", b"session=abc; Path=/"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["path"] == "/gzip":
            document = gzip.compress(b'{"status": "succeeded"}')
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-encoding", b"gzip"), (b"content-length", str(len(document)).encode())]})
            await send({"type": "http.response.body", "body": document})
            return
        echoed = json.dumps({"method": scope["method"], "body": body.decode(), "headers": headers}).encode()
        await send({"type": "http.response.start", "status": 201, "headers": [
            (b"content-type", b"application/json"), (b"request-id", b"req_1")]})
        await send({"type": "http.response.body", "body": echoed})


@pytest.fixture
async def provider() -> AsyncIterator[tuple[Provider, str]]:
    app = Provider()
    async with served(app) as url:
        yield app, url


async def test_a_call_sends_its_exact_body_and_headers_and_reads_the_whole_answer(
        provider: tuple[Provider, str]) -> None:
    """Seed 004: the stored request is sent byte for byte under its idempotency key."""
    _, url = provider
    body = b'{"amount_minor":4250,"currency":"EUR"}'
    async with outbound_client() as http:
        response = await http.post(f"{url}/echo", content=body, headers={"Idempotency-Key": "key-1"})
    assert response.status_code == 201 and response.headers["request-id"] == "req_1"
    echoed = response.json()
    assert echoed["method"] == "POST" and echoed["body"] == body.decode()
    assert echoed["headers"]["idempotency-key"] == "key-1"
    assert echoed["headers"]["content-length"] == str(len(body))


async def test_an_encoded_answer_is_decoded_as_httpx_decodes_it(provider: tuple[Provider, str]) -> None:
    _, url = provider
    async with outbound_client() as http:
        response = await http.get(f"{url}/gzip")
    assert response.json() == {"status": "succeeded"}


async def test_calls_one_after_another_keep_one_connection_alive(provider: tuple[Provider, str]) -> None:
    app, url = provider
    async with outbound_client() as http:
        for n in range(5):
            assert (await http.post(f"{url}/echo", content=f"{n}".encode())).status_code == 201
    assert len(app.ports) == 5 and len(set(app.ports)) == 1


async def test_an_answer_cut_short_is_unanswered_as_under_httpx_own_transport(provider: tuple[Provider, str]) -> None:
    """An incomplete response is Unknown (seed 004), named as httpcore names it."""
    _, url = provider
    for transport in (AiohttpTransport(), httpx.AsyncHTTPTransport()):
        async with outbound_client(transport) as http:
            assert await answer(http.get(f"{url}/cut")) == Unanswered("transport", "RemoteProtocolError")


async def test_a_refused_connection_is_unanswered_as_under_httpx_own_transport() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/payments"
    for transport in (AiohttpTransport(), httpx.AsyncHTTPTransport()):
        async with outbound_client(transport) as http:
            assert await answer(http.post(url, content=b"{}")) == Unanswered("transport", "ConnectError")


async def test_a_call_cancelled_by_its_budget_leaves_the_client_usable(provider: tuple[Provider, str]) -> None:
    """Budgets cancel calls (gateway.providers.calls); the pool stays serviceable after."""
    _, url = provider
    async with outbound_client() as http:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0):
                await http.post(f"{url}/echo", content=b"x")
        assert (await http.post(f"{url}/echo", content=b"y")).json()["body"] == "y"


async def test_two_accounts_on_one_origin_keep_a_pool_each(provider: tuple[Provider, str]) -> None:
    """One keep-alive pool per provider account: two accounts whose base_url is the same host
    (two Stripe accounts on api.stripe.com) make their calls, one after another, alternately; the
    provider sees two connections, each account's calls all on its own, kept alive between calls
    and never lent to the other account."""
    app, url = provider
    accounts = [ProviderAccount(id=f"cardco:acct_{name}:test", base_url=url, api_key="key", webhook_endpoint_id="we")
                for name in ("one", "two")]
    ports: dict[str, list[int]] = {account.id: [] for account in accounts}
    transport = AiohttpTransport()
    async with outbound_client(transport) as http:
        calls = [ProviderCalls(account, SystemClock(), http, kind="checkout") for account in accounts]
        for _ in range(3):
            for account_calls in calls:
                response = await account_calls.read("lookup", "/echo")
                assert isinstance(response, Answer) and response.status_code == 201
                ports[account_calls.account.id].append(app.ports[-1])
        assert transport.pools == ("provider:cardco:acct_one:test", "provider:cardco:acct_two:test")
    one, two = (set(seen) for seen in ports.values())
    assert len(one) == 1 and len(two) == 1 and one != two


async def test_a_providers_cookie_is_never_sent_back(provider: tuple[Provider, str]) -> None:
    """The outbound client keeps no cookies (docs/decisions/0077): what one answer sets is not
    sent on the next call, whichever transport carries it."""
    _, url = provider
    for transport in (AiohttpTransport(), httpx.AsyncHTTPTransport()):
        async with outbound_client(transport) as http:
            assert (await http.get(f"{url}/cookie")).headers["set-cookie"] == "session=abc; Path=/"
            echoed = (await http.post(f"{url}/echo", content=b"x")).json()
            assert "cookie" not in echoed["headers"] and not http.cookies


def account_at(url: str) -> ProviderAccount:
    return ProviderAccount(id="cardco:acct_one:test", base_url=url, api_key="key", webhook_endpoint_id="we")


async def test_a_provider_call_is_sent_and_read_alike_on_either_transport(provider: tuple[Provider, str]) -> None:
    """Seed 004: the stored request is sent byte for byte under its idempotency key. A provider
    call goes on aiohttp's transport directly (no httpx client around it) and through httpx's client
    on any other: the provider sees the same method, body and headers, the client's defaults
    included, and the call reads the same answer."""
    _, url = provider
    body = b'{"amount_minor":4250,"currency":"EUR"}'
    seen = []
    for transport in (AiohttpTransport(), httpx.AsyncHTTPTransport()):
        async with outbound_client(transport) as http:
            calls = ProviderCalls(account_at(url), SystemClock(), http, kind="checkout")
            assert (calls.direct is not None) == isinstance(transport, AiohttpTransport)
            observation = await calls.create("/echo", body, "key-1", calls.credential())
            read = await calls.read("lookup", "/echo", {"client_reference": "ord 1+2"})
            gzipped = await calls.read("lookup", "/gzip")
        assert isinstance(read, Answer) and isinstance(gzipped, Answer)
        assert gzipped.json() == {"status": "succeeded"}  # decoded as httpx decodes it
        assert read.status_code == 201 and read.headers["Request-Id"] == "req_1"
        assert isinstance(observation, ProviderResponse)
        assert observation.status == 201 and observation.request_id == "req_1"
        echoed = json.loads(observation.body)
        assert echoed["method"] == "POST" and echoed["body"] == body.decode()
        assert echoed["headers"]["idempotency-key"] == "key-1"
        assert echoed["headers"]["content-length"] == str(len(body))
        seen.append((echoed["headers"], read.json()["method"]))
    (direct, direct_read), (via_client, client_read) = seen
    assert direct == via_client and direct_read == client_read == "GET"


async def test_a_provider_call_cut_short_or_refused_is_unknown_alike_on_either_transport(
        provider: tuple[Provider, str]) -> None:
    """Seed 004 "The Payment Client": an incomplete response or a transport failure is Unknown, and
    the reason it records is the same whether the call went on aiohttp directly or through httpx."""
    _, url = provider
    refused = f"http://127.0.0.1:{free_port()}"
    for transport in (AiohttpTransport(), httpx.AsyncHTTPTransport()):
        async with outbound_client(transport) as http:
            cut = ProviderCalls(account_at(url), SystemClock(), http, kind="checkout")
            assert await cut.read("lookup", "/cut") == Unanswered("transport", "RemoteProtocolError")
            nobody = ProviderCalls(account_at(refused), SystemClock(), http, kind="checkout")
            observation = await nobody.create("/v1/payments", b"{}", "key-1", nobody.credential())
            assert observation == NoResponse("transport", "provider.transport.ConnectError")
