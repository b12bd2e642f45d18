"""Idempotency keys (API.md "provider_fake: CardCo"): scope (account, key), 24 h retention by
the fake clock, saved results replayed byte for byte, 409 for different parameters.
"""

from __future__ import annotations

from provider_fake import CardCo
from tests.provider_fake.support import LIVE_ACCOUNT, LIVE_KEY, client_for, pay, set_faults


async def test_same_key_same_params_replays_the_saved_result_byte_for_byte(client, control) -> None:
    first = await pay(client, key="k")
    second = await pay(client, key="k")
    assert (second.status_code, second.content) == (first.status_code, first.content)
    assert len((await control.get("/ledger")).json()["payments"]) == 1


async def test_a_saved_decline_is_replayed(client, control) -> None:
    first = await pay(client, key="k", method="pm_card_declined")
    second = await pay(client, key="k", method="pm_card_declined")
    assert (second.status_code, second.content) == (402, first.content)


async def test_a_saved_500_is_replayed_although_the_payment_took_effect(client, control) -> None:
    """error_500_after_effect saves its 500 under the key (API.md "CardCo control API")."""
    await set_faults(control, {"operation": "create_payment", "action": "error_500_after_effect"})
    first = await pay(client, key="k")
    second = await pay(client, key="k")
    assert first.status_code == second.status_code == 500
    assert second.content == first.content
    assert [p["status"] for p in (await control.get("/ledger")).json()["payments"]] == ["succeeded"]


async def test_same_key_different_params_is_409_with_no_effect(client, control) -> None:
    await pay(client, key="k", amount=100)
    response = await pay(client, key="k", amount=200)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "idempotency_key_in_use"
    assert [p["amount_minor"] for p in (await control.get("/ledger")).json()["payments"]] == [100]


async def test_a_key_is_forgotten_after_the_retention_window(client, control, fake: CardCo) -> None:
    first = (await pay(client, key="k")).json()
    fake.clock.advance(86399)
    assert (await pay(client, key="k")).json()["id"] == first["id"]
    fake.clock.advance(1)
    assert (await pay(client, key="k")).json()["id"] != first["id"]
    assert len((await control.get("/ledger")).json()["payments"]) == 2


async def test_the_same_key_in_two_accounts_is_two_payments(fake: CardCo, client, control) -> None:
    test_payment = (await pay(client, key="shared")).json()
    async with client_for(fake, account=LIVE_ACCOUNT, key=LIVE_KEY) as live:
        live_payment = (await pay(live, key="shared")).json()
    assert test_payment["id"] != live_payment["id"]
    accounts = [p["account"] for p in (await control.get("/ledger")).json()["payments"]]
    assert accounts == ["cardco:acct_store:test", "cardco:acct_store:live"]


async def test_a_rate_limit_rule_may_leave_out_retry_after(client, control) -> None:
    """Fault option: `retry_after_s: null` answers the 429 without `Retry-After`,
    as a provider that does not document the header may; still no effect, the key still fresh."""
    await set_faults(control, {"operation": "create_payment", "action": "rate_limit", "retry_after_s": None})
    limited = await pay(client, key="k")
    assert (limited.status_code, limited.json()["error"]["code"]) == (429, "rate_limited")
    assert "retry-after" not in limited.headers
    assert (await control.get("/ledger")).json()["payments"] == []
    assert (await pay(client, key="k")).status_code == 200


async def test_rate_limits_and_validation_errors_save_nothing_under_the_key(client, control) -> None:
    """429 (with Retry-After) and 400 have no effect; the key is still fresh afterwards."""
    await set_faults(
        control,
        {"operation": "create_payment", "action": "rate_limit", "retry_after_s": 3},
        {"operation": "create_payment", "action": "reject_invalid", "nth": 2},
    )
    limited = await pay(client, key="k")
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    assert limited.json()["error"]["code"] == "rate_limited"
    rejected = await pay(client, key="k")
    assert (rejected.status_code, rejected.json()["error"]["code"]) == (400, "invalid_request")
    assert (await control.get("/ledger")).json()["payments"] == []
    assert (await pay(client, key="k", amount=999)).status_code == 200
