"""Payment methods that expire (extension; docs/rehearsing-incidents.md "Payment methods").

Seed 004 resends only "while the payment method is still usable", so CardCo
must be able to say a token has expired, and refuse to charge it."""

from __future__ import annotations

from tests.provider_fake.support import pay


async def test_pm_card_expired_is_expired_and_a_payment_with_it_is_declined(client) -> None:
    described = await client.get("/v1/payment_methods/pm_card_expired")
    assert described.status_code == 200
    assert described.json() == {"object": "payment_method", "id": "pm_card_expired", "status": "expired",
                                "expired_at": "2000-01-01T00:00:00Z"}
    response = await pay(client, method="pm_card_expired")
    assert response.status_code == 402
    assert response.json()["error"]["payment"]["failure_code"] == "expired_card"


async def test_a_method_expired_through_the_control_api_is_refused_from_then_on(client, control) -> None:
    assert (await client.get("/v1/payment_methods/pm_card_visa")).json()["status"] == "usable"
    assert (await pay(client, method="pm_card_visa", key="k1", reference="ORD-1-a1")).status_code == 200
    expired = await control.post("/payment_methods/pm_card_visa/expire")
    assert expired.status_code == 200 and expired.json()["status"] == "expired"
    assert (await client.get("/v1/payment_methods/pm_card_visa")).json()["status"] == "expired"
    declined = await pay(client, method="pm_card_visa", key="k2", reference="ORD-2-a1")
    assert declined.status_code == 402 and declined.json()["error"]["payment"]["failure_code"] == "expired_card"
    await control.post("/reset")
    assert (await client.get("/v1/payment_methods/pm_card_visa")).json()["status"] == "usable"


async def test_a_value_that_is_not_a_payment_method_is_not_found_and_faults_apply(client, control) -> None:
    assert (await client.get("/v1/payment_methods/card_4242")).status_code == 404
    await control.post("/faults", json={"rules": [{"operation": "get_payment_method", "action": "error_500_before_effect"}]})
    assert (await client.get("/v1/payment_methods/pm_card_visa")).status_code == 500
