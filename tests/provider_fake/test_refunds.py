"""Refunds (CardCo extension, docs/decisions/0021, docs/rehearsing-incidents.md "Refunds"):
`POST /v1/payments/{id}/refunds` with an Idempotency-Key and `{"client_reference", "expires_at"}`
creates a refund object of its own (`re_...`), `succeeded` at once or `processing` under a rule;
its payment becomes `refunded`, names the refund and announces `payment.refunded`; documented
no-effect `failed` answers; request expiry like payouts; lookups by id and client reference;
`refund_payment` / `get_refund` / `list_refunds` fault operations; the ledger lists refunds."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from provider_fake import CardCo
from tests.provider_fake.support import START, pay, set_faults

EXPIRES = (START + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")


async def _refund(client: httpx.AsyncClient, payment_id: str, key: str = "refund-ORD-1-r1",
                  reference: str = "ORD-1-r1", expires_at: str = EXPIRES) -> httpx.Response:
    return await client.post(f"/v1/payments/{payment_id}/refunds", headers={"Idempotency-Key": key},
                             json={"client_reference": reference, "expires_at": expires_at})


async def test_a_refund_is_its_own_object_and_its_payment_announces_refunded(client, control, fake: CardCo) -> None:
    payment: dict[str, Any] = (await pay(client)).json()
    refund = (await _refund(client, payment["id"])).json()
    assert (refund["object"], refund["status"], refund["payment"], refund["client_reference"]) == \
        ("refund", "succeeded", payment["id"], "ORD-1-r1")
    assert refund["id"].startswith("re_") and refund["amount_minor"] == payment["amount_minor"]
    fake.clock.advance(10)  # past the visibility delay
    [found] = (await client.get("/v1/refunds", params={"client_reference": "ORD-1-r1"})).json()["data"]
    assert found == (await client.get(f"/v1/refunds/{refund['id']}")).json()
    refunded = (await client.get(f"/v1/payments/{payment['id']}")).json()
    assert (refunded["status"], refunded["refund"]) == ("refunded", {"id": refund["id"],
                                                                     "client_reference": "ORD-1-r1"})
    events = (await control.get("/webhooks")).json()["events"]
    assert [e["type"] for e in events] == ["payment.succeeded", "payment.refunded"]
    [entry] = (await control.get("/ledger")).json()["refunds"]
    assert (entry["id"], entry["payment"], entry["idempotency_key"]) == (refund["id"], payment["id"],
                                                                         "refund-ORD-1-r1")


async def test_a_refund_is_idempotent_by_key_and_a_second_one_has_no_effect(client, fake: CardCo) -> None:
    payment = (await pay(client)).json()
    first = await _refund(client, payment["id"])
    assert (await _refund(client, payment["id"])).content == first.content
    assert (await _refund(client, payment["id"], reference="ORD-1-r9")).status_code == 409
    second = (await _refund(client, payment["id"], key="refund-ORD-1-r2", reference="ORD-1-r2")).json()
    assert (second["status"], second["failure_code"]) == ("failed", "already_refunded")
    assert len([r for r in fake.store.refunds.values() if r.status == "succeeded"]) == 1


async def test_a_refund_after_its_expiry_is_rejected_with_no_effect(client, fake: CardCo) -> None:
    payment = (await pay(client)).json()
    assert (await _refund(client, "pay_unknown", key="k2")).status_code == 404
    fake.clock.advance(5 * 60 + 31)  # past expires_at plus 30 s of skew
    late = await _refund(client, payment["id"])
    assert (late.status_code, late.json()["error"]["code"]) == (400, "request_expired")
    assert fake.store.refunds == {}


async def test_a_processing_refund_completes_later_and_a_declined_one_is_a_documented_no_effect(
        client, control, fake: CardCo) -> None:
    payment = (await pay(client)).json()
    await set_faults(control, {"operation": "refund_payment", "action": "decline", "code": "refund_rejected"},
                     {"operation": "refund_payment", "action": "processing", "nth": 2, "complete_after_s": 3})
    declined = (await _refund(client, payment["id"])).json()
    assert (declined["status"], declined["failure_code"]) == ("failed", "refund_rejected")
    processing = (await _refund(client, payment["id"], key="k2", reference="ORD-1-r2")).json()
    assert processing["status"] == "processing"
    assert (await _refund(client, payment["id"], key="k3", reference="ORD-1-r3")).json()["failure_code"] == \
        "already_refunded"
    fake.clock.advance(3)
    await fake.deliver_pending()
    assert fake.store.refunds[processing["id"]].status == "succeeded"
    assert fake.store.payments[payment["id"]].status == "refunded"


async def test_refund_fault_operations(client, control, fake: CardCo) -> None:
    payment = (await pay(client)).json()
    await set_faults(control, {"operation": "refund_payment", "action": "drop_response"},
                     {"operation": "list_refunds", "action": "error_500_before_effect"})
    try:
        await _refund(client, payment["id"])
    except httpx.HTTPError:
        pass
    assert len(fake.store.refunds) == 1  # the effect happened; the answer was lost
    listed = await client.get("/v1/refunds", params={"client_reference": "ORD-1-r1"})
    assert listed.status_code == 500


@pytest.mark.parametrize("timings", [{"visibility_delay_s": 10}])
async def test_a_refund_of_a_payment_still_hidden_from_lookups_takes_effect(client, control, fake: CardCo) -> None:
    """The visibility delay is a lag of CardCo's lookups (API.md: "may lag behind writes"), not of
    its writes: a refund names its payment by id and finds it at once, as a recall finds its payout.
    A cancellation that races the payment's webhook makes the gateway refund a payment seconds old;
    a 404 there ended the refund with no effect and left the money taken (seed 004 "Cancellation")."""
    payment: dict[str, Any] = (await pay(client)).json()
    assert (await client.get("/v1/payments", params={"client_reference": "ORD-1-a1"})).json() == {"data": []}
    refund = await _refund(client, payment["id"])
    assert (refund.status_code, refund.json()["status"]) == (200, "succeeded")
    [entry] = (await control.get("/ledger")).json()["refunds"]
    assert entry["payment"] == payment["id"]
