"""The control API (API.md "CardCo control API"): request log, ledger, clock, reset, accounts."""

from __future__ import annotations

import base64
from datetime import timedelta

from provider_fake import CardCo
from provider_fake.config import CONFIG_ENV, config_from_env
from tests.provider_fake.support import (
    LIVE_ACCOUNT,
    RECEIVER_URL,
    START,
    TEST_ACCOUNT,
    TEST_KEY,
    client_for,
    pay,
    send_payout,
    set_faults,
)


async def test_the_request_log_keeps_exact_bytes_and_redacts_credentials(client, control) -> None:
    raw = b'{"amount_minor": 4250, "currency": "EUR", "payment_method": "pm_card_visa", "client_reference": "R"}'
    await client.post("/v1/payments", content=raw, headers={"Idempotency-Key": "k", "X-Api-Key": "s"})
    await client.get("/v1/payments?client_reference=R")
    await control.get("/ledger")
    requests = (await control.get("/requests")).json()["requests"]
    assert [(r["method"], r["path"]) for r in requests] == [
        ("POST", "/v1/payments"),
        ("GET", "/v1/payments?client_reference=R"),
    ]
    first = requests[0]
    assert base64.b64decode(first["body_base64"]) == raw
    assert first["headers"]["authorization"] == "[redacted]"
    assert first["headers"]["x-api-key"] == "[redacted]"
    assert first["headers"]["idempotency-key"] == "k"
    assert first["headers"]["cardco-account"] == TEST_ACCOUNT
    assert first["received_at"] == "2026-11-29T16:00:00Z"
    assert all(name == name.lower() for name in first["headers"])


async def test_unauthorized_requests_are_logged_too(fake: CardCo, control) -> None:
    async with client_for(fake, key="ck_wrong") as stranger:
        assert (await pay(stranger)).status_code == 401
    assert len((await control.get("/requests")).json()["requests"]) == 1


async def test_the_ledger_lists_what_took_effect_in_the_documented_shape(client, control) -> None:
    await pay(client, key="k", reference="ORD-1-a1")
    [entry] = (await control.get("/ledger")).json()["payments"]
    assert set(entry) == {
        "id",
        "account",
        "client_reference",
        "idempotency_key",
        "amount_minor",
        "currency",
        "status",
        "created_at",
    }
    assert (entry["account"], entry["idempotency_key"], entry["client_reference"]) == (
        TEST_ACCOUNT,
        "k",
        "ORD-1-a1",
    )


async def test_the_clock_advances_and_reset_clears_everything(client, control, fake: CardCo) -> None:
    assert (await control.post("/clock", json={"advance_s": 90})).json() == {"now": "2026-11-29T16:01:30Z"}
    assert (await control.post("/clock", json={"advance_s": -1})).status_code == 400
    await set_faults(control, {"operation": "create_payment", "action": "decline", "times": 0})
    await pay(client)
    assert (await control.post("/reset")).status_code == 200
    assert (await control.get("/clock")).json() == {"now": "2026-11-29T16:00:00Z"}
    assert (await control.get("/ledger")).json() == {"payments": [], "payouts": [], "refunds": [], "recalls": []}
    assert (await control.get("/requests")).json() == {"requests": []}
    assert (await control.get("/webhooks")).json() == {"events": [], "deliveries": []}
    assert (await pay(client)).status_code == 200


async def test_accounts_can_be_replaced_at_runtime(fake: CardCo, control) -> None:
    """PUT /_control/accounts (extension): new keys take effect at once; duplicates are refused."""
    new = {"id": TEST_ACCOUNT, "api_key": "ck_test_new", "webhook_url": RECEIVER_URL, "webhook_secrets": []}
    assert (await control.put("/accounts", json={"accounts": [new, new]})).status_code == 400
    assert (await control.put("/accounts", json={"accounts": [new]})).status_code == 200
    async with client_for(fake, key=TEST_KEY) as old, client_for(fake, key="ck_test_new") as current:
        assert (await pay(old)).status_code == 401
        assert (await pay(current)).status_code == 200
    accounts = (await control.get("/accounts")).json()["accounts"]
    assert [a["id"] for a in accounts] == [TEST_ACCOUNT]
    assert LIVE_ACCOUNT not in {a["id"] for a in accounts}


def test_the_server_config_comes_from_cardco_config(tmp_path, monkeypatch) -> None:
    """`uvicorn provider_fake.app:app` reads the JSON file named by CARDCO_CONFIG."""
    path = tmp_path / "cardco.json"
    path.write_text(
        '{"accounts": [{"id": "cardco:acct_x:test", "api_key": "ck_x"}], "visibility_delay_s": 3}'
    )
    monkeypatch.setenv(CONFIG_ENV, str(path))
    config = config_from_env()
    assert ([a.id for a in config.accounts], config.visibility_delay_s) == (["cardco:acct_x:test"], 3)
    monkeypatch.delenv(CONFIG_ENV)
    assert [a.id for a in config_from_env().accounts] == [TEST_ACCOUNT, LIVE_ACCOUNT, "stripe:acct_store:test"]


async def test_unknown_paths_and_wrong_methods_are_logged_too(fake: CardCo) -> None:
    """API.md: `GET /_control/requests` lists every request except those to `/_control/`."""
    async with client_for(fake) as client:
        assert (await client.get("/v1/nothing")).status_code == 404
        assert (await client.delete("/v1/payments")).status_code == 405
    assert [(r["method"], r["path"]) for r in fake.store.requests] == [("GET", "/v1/nothing"), ("DELETE", "/v1/payments")]


async def test_the_request_log_and_the_deliveries_name_the_fault_that_fired(client, control, fake: CardCo) -> None:
    """The campaign report ("faults_fired ... counted from CardCo's request log and webhook deliveries"): a
    logged request names the rule that applied to it, a delivery the webhook rule that shaped it;
    an installed rule that matched nothing leaves no trace, and the Stripe mount logs the same."""
    await set_faults(control, {"operation": "create_payment", "action": "rate_limit", "client_reference": "ORD-1-a1"},
                     {"operation": "webhook", "action": "bad_signature", "client_reference": "ORD-1-a1"},
                     {"operation": "create_payout", "action": "drop_response", "client_reference": "PO-9-a1"})
    await pay(client, key="k1", reference="ORD-1-a1")
    await pay(client, key="k1", reference="ORD-1-a1")
    async with client_for(fake, account="stripe:acct_store:test", key="sk_test_k1") as stripe:
        await set_faults(control, {"operation": "create_payment", "action": "error_500_before_effect"})
        await stripe.post("/stripe/v1/payment_intents", data={"amount": "100", "currency": "eur"})
    requests = (await control.get("/requests")).json()["requests"]
    assert [r.get("fault") for r in requests] == ["create_payment:rate_limit", None, "create_payment:error_500_before_effect"]
    deliveries = (await control.get("/webhooks")).json()["deliveries"]
    assert [d["fault"] for d in deliveries] == ["webhook:bad_signature"]


async def test_the_ledger_lists_recalls_with_the_payout_they_name(client, control, fake: CardCo) -> None:
    """The campaign report (ledger agreement for recalls, extension): every recall CardCo made, any status."""
    payout = (await send_payout(client, expires_at=START + timedelta(minutes=5))).json()
    fake.clock.advance(2)
    expires = (START + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    await client.post(f"/v1/payouts/{payout['id']}/recalls", headers={"Idempotency-Key": "recall-PO-1-r1"},
                      json={"client_reference": "PO-1-r1", "expires_at": expires})
    [recall] = (await control.get("/ledger")).json()["recalls"]
    assert (recall["client_reference"], recall["payout"], recall["idempotency_key"], recall["amount_minor"],
            recall["status"]) == ("PO-1-r1", payout["id"], "recall-PO-1-r1", payout["amount_minor"], "processing")
