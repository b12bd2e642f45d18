"""Webhooks (API.md "provider_fake: CardCo", "Provider notifications"; NOTES.md "Standard
Webhooks"): signed per account, retried on non-2xx by the fake clock, stable event ids, and the
webhook fault actions.
"""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from standardwebhooks.webhooks import Webhook

from provider_fake import CardCo
from provider_fake.signing import sign_v1
from tests.provider_fake.support import (
    LIVE_ACCOUNT,
    LIVE_KEY,
    RECEIVER_URL,
    SECRET,
    SEED,
    START,
    TEST_ACCOUNT,
    TEST_KEY,
    client_for,
    make_config,
    pay,
    set_faults,
)

OTHER_SECRET = "whsec_" + base64.b64encode(b"the-rotated-in-secret-02").decode()


def signatures(received: dict) -> list[str]:
    return received["headers"]["webhook-signature"].split(" ")


def test_v1_matches_the_standard_webhooks_test_vector() -> None:
    signature = sign_v1(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
    )
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


async def test_a_delivery_is_signed_byte_identically_to_the_reference_library(client, fake, receiver) -> None:
    """Conformance: the reference `standardwebhooks` signature of the same id, timestamp and
    body equals CardCo's v1 entry."""
    await pay(client)
    await fake.deliver_pending()
    [received] = receiver.received
    headers = received["headers"]
    assert headers["webhook-id"].startswith("msg_")
    assert headers["webhook-timestamp"] == str(int(START.timestamp()))
    reference = Webhook(SECRET).sign(
        headers["webhook-id"],
        datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC),
        received["body"].decode(),
    )
    assert signatures(received) == [reference]


async def test_the_payload_is_api_mds_cardco_payload(client, fake, receiver) -> None:
    payment = (await pay(client)).json()
    await fake.deliver_pending()
    [payload] = receiver.payloads()
    assert payload["id"].startswith("evt_")
    assert payload["type"] == "payment.succeeded"
    assert payload["created"] == "2026-11-29T16:00:00Z"
    assert payload["data"] == {"object": payment}


async def test_every_secret_signs_during_rotation_and_v1a_uses_the_ed25519_key(
    client, control, fake, receiver
) -> None:
    account = {
        "id": TEST_ACCOUNT,
        "api_key": TEST_KEY,
        "webhook_url": RECEIVER_URL,
        "webhook_secrets": [SECRET, OTHER_SECRET],
        "webhook_signing_key": SEED,
    }
    accounts = (await control.put("/accounts", json={"accounts": [account]})).json()["accounts"]
    public_key = accounts[0]["webhook_public_key"]
    await pay(client)
    await fake.deliver_pending()
    [received] = receiver.received
    v1_old, v1_new, v1a = signatures(received)
    headers = received["headers"]
    stamp = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    assert v1_old == Webhook(SECRET).sign(headers["webhook-id"], stamp, received["body"].decode())
    assert v1_new == Webhook(OTHER_SECRET).sign(headers["webhook-id"], stamp, received["body"].decode())
    content = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + received["body"]
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key.removeprefix("whpk_")))
    key.verify(base64.b64decode(v1a.removeprefix("v1a,")), content)
    with pytest.raises(InvalidSignature):
        key.verify(base64.b64decode(v1a.removeprefix("v1a,")), content + b" ")


async def test_non_2xx_is_retried_on_the_schedule_with_a_stable_event_id(
    client, fake: CardCo, receiver
) -> None:
    """Retried on non-2xx with backoff (1, 2, 4 ... s by the fake clock); the event id is stable,
    the webhook-id names each attempt."""
    receiver.fail_first = 2
    await pay(client)
    assert len(await fake.deliver_pending()) == 1
    assert await fake.deliver_pending() == []
    fake.clock.advance(1)
    assert len(await fake.deliver_pending()) == 1
    fake.clock.advance(1.9)
    assert await fake.deliver_pending() == []
    fake.clock.advance(0.1)
    [delivery] = await fake.deliver_pending()
    assert delivery.state == "delivered"
    assert [a["status"] for a in delivery.attempts] == [503, 503, 204]
    assert len({p["id"] for p in receiver.payloads()}) == 1
    assert len({r["headers"]["webhook-id"] for r in receiver.received}) == 3
    assert len({r["headers"]["webhook-timestamp"] for r in receiver.received}) == 3


@pytest.mark.parametrize("timings", [{"webhook_retry_schedule_s": [1, 1]}])
async def test_a_delivery_is_given_up_after_the_last_retry(client, fake: CardCo, receiver) -> None:
    receiver.fail_first = 99
    await pay(client)
    for _ in range(4):
        await fake.deliver_pending()
        fake.clock.advance(1)
    assert len(receiver.received) == 3
    assert fake.webhooks.deliveries[0].state == "failed"


async def test_redeliver_resends_an_event_with_its_id(client, control, fake, receiver) -> None:
    await pay(client)
    await fake.deliver_pending()
    event_id = receiver.payloads()[0]["id"]
    response = await control.post(f"/webhooks/redeliver/{event_id}")
    assert response.json()["state"] == "delivered"
    assert [p["id"] for p in receiver.payloads()] == [event_id, event_id]
    assert receiver.received[0]["body"] == receiver.received[1]["body"]
    assert (await control.post("/webhooks/redeliver/evt_nope")).status_code == 404


async def test_sequence_increases_per_object_across_events(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "processing", "complete_after_s": 5})
    await pay(client)
    fake.clock.advance(5)
    await control.post("/webhooks/deliver")
    objects = [p["data"]["object"] for p in receiver.payloads()]
    assert [(o["status"], o["sequence"]) for o in objects] == [("processing", 1), ("succeeded", 2)]


async def test_the_background_tick_delivers_while_running(client, fake: CardCo, receiver) -> None:
    """The lifespan's background task completes processing and delivers without control calls."""
    async with fake.running(tick_s=0.01):
        await pay(client)
        for _ in range(200):
            if receiver.received:
                break
            await asyncio.sleep(0.01)
    assert [p["type"] for p in receiver.payloads()] == ["payment.succeeded"]


async def test_accounts_without_a_webhook_url_record_events_but_send_nothing(
    fake: CardCo, control, receiver
) -> None:
    async with client_for(fake, account=LIVE_ACCOUNT, key=LIVE_KEY) as live:
        await pay(live)
    await fake.deliver_pending()
    assert receiver.received == []
    assert [e["account"] for e in (await control.get("/webhooks")).json()["events"]] == [LIVE_ACCOUNT]


# Webhook fault actions -------------------------------------------------------------------------


async def test_duplicate_sends_count_extra_copies(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "duplicate", "count": 2})
    await pay(client)
    await fake.deliver_pending()
    assert len(receiver.received) == 3
    assert len({p["id"] for p in receiver.payloads()}) == 1
    assert len({r["headers"]["webhook-id"] for r in receiver.received}) == 3


async def test_delay_ms_holds_the_delivery_by_the_fake_clock(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "delay_ms", "delay_ms": 1500})
    await pay(client)
    await fake.deliver_pending()
    assert receiver.received == []
    fake.clock.advance(1.5)
    await fake.deliver_pending()
    assert len(receiver.received) == 1


async def test_reorder_sends_the_event_after_the_next_one(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "reorder"})
    await pay(client, key="k1", reference="A")
    await fake.deliver_pending()
    assert receiver.received == []
    await pay(client, key="k2", reference="B")
    await fake.deliver_pending()
    refs = [p["data"]["object"]["client_reference"] for p in receiver.payloads()]
    assert refs == ["B", "A"]


async def test_a_reordered_event_goes_out_alone_after_the_hold(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "reorder"})
    await pay(client)
    fake.clock.advance(60)
    await fake.deliver_pending()
    assert len(receiver.received) == 1


async def test_omit_event_id_sends_a_payload_without_id(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "omit_event_id"})
    await pay(client)
    await fake.deliver_pending()
    [payload] = receiver.payloads()
    assert "id" not in payload
    assert payload["type"] == "payment.succeeded"


async def test_tamper_amount_sends_a_validly_signed_wrong_amount(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "tamper_amount"})
    await pay(client, amount=4250)
    await fake.deliver_pending()
    [received] = receiver.received
    assert receiver.payloads()[0]["data"]["object"]["amount_minor"] == 4251
    stamp = datetime.fromtimestamp(int(received["headers"]["webhook-timestamp"]), UTC)
    assert signatures(received) == [
        Webhook(SECRET).sign(received["headers"]["webhook-id"], stamp, received["body"].decode())
    ]


async def test_drop_never_sends_but_redeliver_can(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "drop"})
    await pay(client)
    fake.clock.advance(100)
    await fake.deliver_pending()
    assert receiver.received == []
    [event] = (await control.get("/webhooks")).json()["events"]
    await control.post(f"/webhooks/redeliver/{event['id']}")
    assert len(receiver.received) == 1


async def test_bad_signature_signs_with_a_wrong_secret(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "bad_signature"})
    await pay(client)
    await fake.deliver_pending()
    [received] = receiver.received
    stamp = datetime.fromtimestamp(int(received["headers"]["webhook-timestamp"]), UTC)
    good = Webhook(SECRET).sign(received["headers"]["webhook-id"], stamp, received["body"].decode())
    assert signatures(received)[0].startswith("v1,")
    assert signatures(received) != [good]


async def test_webhook_rules_match_by_client_reference(client, control, fake, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "drop", "client_reference": "B", "times": 0})
    await pay(client, key="1", reference="A")
    await pay(client, key="2", reference="B")
    await fake.deliver_pending()
    assert [p["data"]["object"]["client_reference"] for p in receiver.payloads()] == ["A"]


async def test_webhook_urls_must_be_absolute_http(control) -> None:
    account = {
        "id": TEST_ACCOUNT,
        "api_key": TEST_KEY,
        "webhook_url": "not a url",
        "webhook_secrets": [SECRET],
    }
    assert (await control.put("/accounts", json={"accounts": [account]})).status_code == 400


async def test_an_unreachable_url_is_a_failed_attempt_that_is_retried(clock) -> None:
    """Transport errors count as failed attempts (the default client, a refused connection)."""
    config = make_config()
    account = config.accounts[0].model_copy(update={"webhook_url": "http://127.0.0.1:9/hooks"})
    fake = CardCo(config.model_copy(update={"accounts": [account]}), clock=clock)
    async with client_for(fake) as client:
        await pay(client)
    [delivery] = await fake.deliver_pending()
    assert delivery.state == "pending"
    assert delivery.attempts[0]["error"].startswith("ConnectError")
