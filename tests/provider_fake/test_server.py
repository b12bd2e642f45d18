"""CardCo as a real server (API.md: `uvicorn provider_fake.app:app`), and the lost response,
on CardCo's mount and on the Stripe dialect's.

API.md "CardCo control API": `drop_response` commits the effect, then holds the connection
without answering until the client gives up (or 60 s), then closes it. Over real TCP the
caller's own timeout fires; in-process through respx the caller gets the same ReadTimeout.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import respx
import stripe
import uvicorn

from provider_fake import CardCo, replies
from provider_fake.app import create_app
from provider_fake.inprocess import mount
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, intent_params
from tests.provider_fake.support import STRIPE_KEY, TEST_ACCOUNT, TEST_KEY, make_config, payment_body

HEADERS = {"Authorization": f"Bearer {TEST_KEY}", "CardCo-Account": TEST_ACCOUNT, "Idempotency-Key": "k"}
DROP = {"rules": [{"operation": "create_payment", "action": "drop_response"}]}


@contextmanager
def serving(fake: CardCo) -> Iterator[str]:
    """Run CardCo under uvicorn on a free loopback port in a thread; stop it on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(fake), log_level="critical", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            thread.join(0.01)
        if not server.started:
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_drop_response_over_tcp_commits_the_effect_and_times_the_caller_out() -> None:
    with serving(CardCo(make_config())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=1.0) as client:
            (await client.post("/_control/faults", json=DROP)).raise_for_status()
            with pytest.raises(httpx.ReadTimeout):
                await client.post("/v1/payments", json=payment_body(), headers=HEADERS)
            [payment] = (await client.get("/_control/ledger")).json()["payments"]
            resent = await client.post("/v1/payments", json=payment_body(), headers=HEADERS)
            assert (resent.status_code, resent.json()["id"]) == (200, payment["id"])


async def test_a_held_connection_is_closed_without_a_response_when_the_hold_ends(monkeypatch) -> None:
    """A caller with no deadline of its own sees the connection closed mid-message."""
    monkeypatch.setattr(replies, "HOLD_DROPPED_S", 0.2)
    with serving(CardCo(make_config())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5.0) as client:
            (await client.post("/_control/faults", json=DROP)).raise_for_status()
            with pytest.raises(httpx.RemoteProtocolError):
                await client.post("/v1/payments", json=payment_body(), headers=HEADERS)
            assert len((await client.get("/_control/ledger")).json()["payments"]) == 1


async def test_drop_response_through_respx_commits_the_effect_and_times_the_caller_out() -> None:
    fake = CardCo(make_config())
    with respx.mock(assert_all_called=False) as router:
        mount(router, fake, "http://cardco.test")
        async with httpx.AsyncClient(base_url="http://cardco.test") as client:
            (await client.post("/_control/faults", json=DROP)).raise_for_status()
            with pytest.raises(httpx.ReadTimeout):
                await client.post("/v1/payments", json=payment_body(), headers=HEADERS)
            [payment] = (await client.get("/_control/ledger")).json()["payments"]
            resent = await client.post("/v1/payments", json=payment_body(), headers=HEADERS)
            assert resent.json()["id"] == payment["id"]


@OFFICIAL_CLIENT_WARNINGS
def test_the_stripe_mount_over_tcp_with_the_official_client_and_a_lost_request() -> None:
    """The Stripe dialect served by uvicorn, the official client (synchronous, 1 s timeout) as
    the caller: `timeout_before_effect` loses the request (a connection error, nothing in the
    ledger), and the resend under the same key takes effect once (docs/rehearsing-incidents.md
    "Stripe dialect")."""
    with serving(CardCo(make_config())) as url:
        http_client = stripe.HTTPXClient(timeout=1.0, allow_sync_methods=True)
        client = stripe.StripeClient(STRIPE_KEY, base_addresses={"api": url + "/stripe"}, http_client=http_client,
                                     max_network_retries=0)
        rule = {"operation": "create_payment", "action": "timeout_before_effect"}
        httpx.post(f"{url}/_control/faults", json={"rules": [rule]}).raise_for_status()
        with pytest.raises(stripe.APIConnectionError):
            client.v1.payment_intents.create(intent_params(), {"idempotency_key": "k"})  # type: ignore[arg-type]
        assert httpx.get(f"{url}/_control/ledger").json()["payments"] == []
        intent = client.v1.payment_intents.create(intent_params(), {"idempotency_key": "k"})  # type: ignore[arg-type]
        assert [p["id"] for p in httpx.get(f"{url}/_control/ledger").json()["payments"]] == [intent.id]
        http_client.close()
