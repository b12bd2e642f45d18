"""Recalls (CardCo extension, docs/rehearsing-incidents.md): `POST /v1/payouts/{id}/recalls`
with an Idempotency-Key, processing -> recalled and `payout.recalled`; documented no-effect
`failed` answers (`recall_window_closed`, `payout_not_paid`, `already_recalled`); lookup by
client reference; `create_recall` / `list_recalls` fault operations. The payout keeps its status.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from provider_fake import CardCo
from tests.provider_fake.support import START, send_payout, set_faults

EXPIRES = (START + timedelta(days=3)).isoformat().replace("+00:00", "Z")


async def _paid(client: httpx.AsyncClient, fake: CardCo) -> dict[str, Any]:
    payout: dict[str, Any] = (await send_payout(client, expires_at=START + timedelta(minutes=5))).json()
    fake.clock.advance(2)
    return payout


async def _recall(client: httpx.AsyncClient, payout_id: str, key: str = "recall-PO-1-r1",
                  reference: str = "PO-1-r1") -> httpx.Response:
    return await client.post(f"/v1/payouts/{payout_id}/recalls", headers={"Idempotency-Key": key},
                             json={"client_reference": reference, "expires_at": EXPIRES})


async def test_a_recall_is_processing_then_recalled_and_announced(client, control, fake: CardCo) -> None:
    payout = await _paid(client, fake)
    recall = (await _recall(client, payout["id"])).json()
    assert (recall["object"], recall["status"], recall["payout"]) == ("payout_recall", "processing", payout["id"])
    assert recall["id"].startswith("prc_") and recall["amount_minor"] == payout["amount_minor"]
    fake.clock.advance(2)
    [found] = (await client.get("/v1/payout_recalls", params={"client_reference": "PO-1-r1"})).json()["data"]
    assert (found["id"], found["status"]) == (recall["id"], "recalled")
    types = [e["type"] for e in (await control.get("/webhooks")).json()["events"]]
    assert types[-2:] == ["payout.recall_processing", "payout.recalled"]
    assert (await client.get(f"/v1/payouts/{payout['id']}")).json()["status"] == "paid"  # its own records stay


async def test_a_recall_is_idempotent_by_key(client, fake: CardCo) -> None:
    payout = await _paid(client, fake)
    first = await _recall(client, payout["id"])
    assert (await _recall(client, payout["id"])).content == first.content
    assert (await _recall(client, payout["id"], reference="PO-1-r9")).status_code == 409
    assert len(fake.store.recalls) == 1


async def test_after_the_window_a_recall_fails_with_no_effect(client, fake: CardCo) -> None:
    payout = await _paid(client, fake)
    fake.clock.advance(86_400)
    recall = (await _recall(client, payout["id"])).json()
    assert (recall["status"], recall["failure_code"]) == ("failed", "recall_window_closed")


async def test_only_a_paid_payout_not_yet_recalled_can_be_recalled(client, fake: CardCo) -> None:
    processing = (await send_payout(client, expires_at=START + timedelta(minutes=5))).json()
    assert (await _recall(client, processing["id"])).json()["failure_code"] == "payout_not_paid"
    fake.clock.advance(2)
    assert (await _recall(client, processing["id"], key="k2", reference="PO-1-r2")).json()["status"] == "processing"
    again = (await _recall(client, processing["id"], key="k3", reference="PO-1-r3")).json()
    assert again["failure_code"] == "already_recalled"
    assert (await _recall(client, "po_unknown", key="k4")).status_code == 404


async def test_recall_fault_operations(client, control, fake: CardCo) -> None:
    payout = await _paid(client, fake)
    await set_faults(control, {"operation": "create_recall", "action": "drop_response"},
                     {"operation": "list_recalls", "action": "error_500_before_effect"})
    try:
        await _recall(client, payout["id"])
    except httpx.HTTPError:
        pass
    assert len(fake.store.recalls) == 1  # the effect happened; the answer was lost
    listed = await client.get("/v1/payout_recalls", params={"client_reference": "PO-1-r1"})
    assert listed.status_code == 500
