"""Payments and lookups (API.md "provider_fake: CardCo", "Precise details"); refunds: test_refunds.py."""

from __future__ import annotations

import pytest

from provider_fake import CardCo
from tests.provider_fake.support import (
    LIVE_ACCOUNT,
    LIVE_KEY,
    TEST_ACCOUNT,
    client_for,
    pay,
    payment_body,
    send_payout,
)


async def test_visa_succeeds_with_the_documented_payment_object(client) -> None:
    """pm_card_visa succeeds; the object has exactly API.md's fields plus sequence."""
    response = await pay(client, method="pm_card_visa")
    assert response.status_code == 200
    payment = response.json()
    assert set(payment) == {
        "object",
        "id",
        "client_reference",
        "amount_minor",
        "currency",
        "status",
        "failure_code",
        "next_action",
        "sequence",
    }
    assert payment["object"] == "payment"
    assert payment["id"].startswith("pay_")
    assert (payment["status"], payment["failure_code"], payment["sequence"]) == ("succeeded", None, 1)
    assert (payment["amount_minor"], payment["currency"], payment["client_reference"]) == (
        4250,
        "EUR",
        "ORD-1-a1",
    )


async def test_any_other_pm_value_succeeds(client) -> None:
    """Any other pm_... value succeeds."""
    assert (await pay(client, method="pm_whatever")).json()["status"] == "succeeded"


async def test_declined_card_is_a_402_decision_recorded_as_failed(client, control) -> None:
    """pm_card_declined: 402 card_declined; the payment exists as failed, the ledger says failed."""
    response = await pay(client, method="pm_card_declined")
    assert response.status_code == 402
    error = response.json()["error"]
    assert error["code"] == "card_declined"
    payment = error["payment"]
    assert (payment["status"], payment["failure_code"]) == ("failed", "card_declined")
    assert (await client.get(f"/v1/payments/{payment['id']}")).json()["status"] == "failed"
    ledger = (await control.get("/ledger")).json()
    assert [p["status"] for p in ledger["payments"]] == ["failed"]


async def test_3ds_requires_an_action_that_expires_by_the_fake_clock(client, fake: CardCo) -> None:
    """pm_card_3ds: requires_action with an expiring redirect; after expiry the payment fails."""
    payment = (await pay(client, method="pm_card_3ds")).json()
    assert payment["status"] == "requires_action"
    action = payment["next_action"]
    assert action["type"] == "redirect_to_url"
    assert action["url"].endswith(f"/_control/payments/{payment['id']}/authenticate")
    assert action["expires_at"] == "2026-11-29T16:10:00Z"
    fake.clock.advance(599)
    assert (await client.get(f"/v1/payments/{payment['id']}")).json()["status"] == "requires_action"
    fake.clock.advance(1)
    expired = (await client.get(f"/v1/payments/{payment['id']}")).json()
    assert (expired["status"], expired["failure_code"], expired["next_action"], expired["sequence"]) == (
        "failed",
        "action_expired",
        None,
        2,
    )


async def test_completing_the_action_succeeds_the_payment(client, control) -> None:
    """The redirect URL, POSTed with a result, completes 3-D Secure (control extension)."""
    payment = (await pay(client, method="pm_card_3ds")).json()
    done = await client.post(payment["next_action"]["url"], json={"result": "succeeded"})
    assert done.status_code == 200
    assert (done.json()["status"], done.json()["sequence"]) == ("succeeded", 2)


@pytest.mark.parametrize(
    "body",
    [
        payment_body(method="card_visa"),
        payment_body(amount=0),
        {**payment_body(), "amount_minor": "4250"},
        {**payment_body(), "currency": "eur"},
        {k: v for k, v in payment_body().items() if k != "client_reference"},
    ],
)
async def test_invalid_requests_are_400_with_no_effect(client, control, body) -> None:
    """400 invalid_request is a documented no-effect."""
    response = await client.post("/v1/payments", json=body, headers={"Idempotency-Key": "k"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert (await control.get("/ledger")).json()["payments"] == []


async def test_missing_idempotency_key_is_invalid(client) -> None:
    response = await client.post("/v1/payments", json=payment_body())
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("account", "key"),
    [
        (TEST_ACCOUNT, "ck_wrong"),
        (LIVE_ACCOUNT, "ck_test_k1"),
        ("cardco:acct_other:test", "ck_test_k1"),
        ("", ""),
    ],
)
async def test_a_key_acts_only_on_its_own_account(fake: CardCo, account: str, key: str) -> None:
    """Keys are scoped per account and environment: the test key cannot act on live."""
    async with client_for(fake, account=account, key=key) as client:
        response = await pay(client)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


async def test_lookup_by_id_and_by_client_reference(client) -> None:
    first = (await pay(client, key="k1", reference="ORD-9-a1")).json()
    await pay(client, key="k2", reference="ORD-9-a2")
    assert (await client.get(f"/v1/payments/{first['id']}")).json() == first
    listed = (await client.get("/v1/payments", params={"client_reference": "ORD-9-a1"})).json()
    assert listed == {"data": [first]}


async def test_other_accounts_payments_are_not_found(fake: CardCo, client) -> None:
    payment = (await pay(client)).json()
    async with client_for(fake, account=LIVE_ACCOUNT, key=LIVE_KEY) as live:
        assert (await live.get(f"/v1/payments/{payment['id']}")).status_code == 404
        assert (await live.get("/v1/payments", params={"client_reference": "ORD-1-a1"})).json() == {
            "data": []
        }


@pytest.mark.parametrize("timings", [{"visibility_delay_s": 5}])
async def test_visibility_delay_hides_new_payments_from_lookups(client, fake: CardCo) -> None:
    """Lookups may lag behind writes by the configured visibility delay."""
    payment = (await pay(client)).json()
    fake.clock.advance(4.9)
    assert (await client.get(f"/v1/payments/{payment['id']}")).status_code == 404
    assert (await client.get("/v1/payments", params={"client_reference": "ORD-1-a1"})).json() == {"data": []}
    fake.clock.advance(0.1)
    assert (await client.get(f"/v1/payments/{payment['id']}")).status_code == 200


async def test_unknown_paths_answer_in_cardcos_error_shape(client) -> None:
    response = await client.get("/v1/nothing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_lookup_by_client_reference_lists_that_accounts_payments_oldest_first(fake: CardCo, client) -> None:
    """GET /v1/payments?client_reference= lists every visible payment of the caller's account with
    that reference, in the order they were taken; not another reference's, another account's, or
    a payout's with the same reference; and nothing after a reset (the store's index by reference)."""
    first = (await pay(client, key="k1", reference="ORD-7-a1")).json()
    await pay(client, key="k2", reference="ORD-7-a2")
    second = (await pay(client, key="k3", reference="ORD-7-a1", method="pm_card_declined")).json()["error"]
    await send_payout(client, key="p1", reference="ORD-7-a1")
    async with client_for(fake, account=LIVE_ACCOUNT, key=LIVE_KEY) as live:
        await pay(live, key="k1", reference="ORD-7-a1")
    listed = (await client.get("/v1/payments", params={"client_reference": "ORD-7-a1"})).json()
    assert listed == {"data": [first, second["payment"]]}
    payouts = (await client.get("/v1/payouts", params={"client_reference": "ORD-7-a1"})).json()["data"]
    assert [payout["object"] for payout in payouts] == ["payout"]
    fake.reset()
    assert (await client.get("/v1/payments", params={"client_reference": "ORD-7-a1"})).json() == {"data": []}


async def test_settling_visits_only_objects_with_a_pending_change(fake: CardCo, client) -> None:
    """Every request first applies the changes due by the fake clock; the store tracks the objects
    that have one (stored with it, forgotten once applied), so settling does not scan the ledger."""
    await pay(client, key="k1", reference="ORD-8-a1")
    action = (await pay(client, key="k2", reference="ORD-8-a2", method="pm_card_3ds")).json()
    assert [obj.id for obj in fake.store.with_schedule()] == [action["id"]]
    fake.clock.advance(600)
    expired = (await client.get(f"/v1/payments/{action['id']}")).json()
    assert (expired["status"], expired["failure_code"]) == ("failed", "action_expired")
    assert fake.store.with_schedule() == []
