"""Payouts (API.md "provider_fake: CardCo"): expiry with skew, processing -> paid, decline with
destination_closed, later returned.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from provider_fake import CardCo
from tests.provider_fake.support import START, send_payout, set_faults


@pytest.mark.parametrize(("late_by_s", "status"), [(29, 200), (30, 200), (31, 400)])
async def test_a_payout_received_after_expiry_plus_skew_is_rejected(
    client, control, fake, late_by_s, status
) -> None:
    """Received after expires_at + 30 s: 400 request_expired, no effect; at the edge: accepted."""
    fake.clock.advance(late_by_s)
    response = await send_payout(client, expires_at=START)
    assert response.status_code == status
    payouts = (await control.get("/ledger")).json()["payouts"]
    if status == 400:
        assert response.json()["error"]["code"] == "request_expired"
        assert payouts == []
    else:
        assert len(payouts) == 1


async def test_a_payout_is_processing_then_paid_by_the_fake_clock(client, control, fake: CardCo) -> None:
    payout = (await send_payout(client, expires_at=START + timedelta(minutes=5))).json()
    assert (payout["object"], payout["status"], payout["sequence"]) == ("payout", "processing", 1)
    assert payout["id"].startswith("po_")
    fake.clock.advance(2)
    listed = (await client.get("/v1/payouts", params={"client_reference": "PO-1-a1"})).json()["data"]
    assert [(p["status"], p["sequence"]) for p in listed] == [("paid", 2)]
    assert (await client.get(f"/v1/payouts/{payout['id']}")).json() == listed[0]
    events = (await control.get("/webhooks")).json()["events"]
    assert [e["type"] for e in events] == ["payout.processing", "payout.paid"]


async def test_a_payout_is_idempotent_by_key(client, control) -> None:
    first = await send_payout(client, key="payout-P1-a1")
    assert (await send_payout(client, key="payout-P1-a1")).content == first.content
    assert (await send_payout(client, key="payout-P1-a1", amount=1)).status_code == 409
    assert len((await control.get("/ledger")).json()["payouts"]) == 1


async def test_decline_destination_closed_answers_200_failed(client, control) -> None:
    """A documented no-effect: 200, status failed, failure_code destination_closed."""
    await set_faults(
        control, {"operation": "create_payout", "action": "decline", "code": "destination_closed"}
    )
    response = await send_payout(client)
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["failure_code"]) == ("failed", "destination_closed")
    assert [e["type"] for e in (await control.get("/webhooks")).json()["events"]] == ["payout.failed"]


async def test_processing_rule_can_fail_a_payout_later(client, control, fake: CardCo) -> None:
    await set_faults(
        control,
        {
            "operation": "create_payout",
            "action": "processing",
            "complete_after_s": 60,
            "final_status": "failed",
        },
    )
    payout = (await send_payout(client)).json()
    fake.clock.advance(60)
    later = (await client.get(f"/v1/payouts/{payout['id']}")).json()
    assert (later["status"], later["failure_code"]) == ("failed", "destination_closed")


async def test_a_paid_payout_can_be_returned_later(client, control, fake: CardCo) -> None:
    payout = (await send_payout(client)).json()
    assert (await control.post(f"/payouts/{payout['id']}/return")).status_code == 400
    fake.clock.advance(2)
    returned = await control.post(f"/payouts/{payout['id']}/return")
    assert (returned.json()["status"], returned.json()["sequence"]) == ("returned", 3)
    assert (await control.get("/ledger")).json()["payouts"][0]["status"] == "returned"
    types = [e["type"] for e in (await control.get("/webhooks")).json()["events"]]
    assert types == ["payout.processing", "payout.paid", "payout.returned"]
