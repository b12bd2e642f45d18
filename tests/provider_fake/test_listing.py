"""Listing by creation time, the read a provider-side reconciliation pages through (extension;
docs/rehearsing-incidents.md "Listing by creation time"), on CardCo's mount and Stripe's
(`GET /v1/payment_intents`, `/v1/refunds`, `/v1/payouts` with `created[gte]`/`created[lt]`,
`limit`, `starting_after`), and the control API's changes behind the client's back (amend, forget).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from provider_fake import CardCo
from provider_fake.clock import rfc3339
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, create_intent
from tests.provider_fake.support import LIVE_ACCOUNT, LIVE_KEY, START, client_for, pay, send_payout, set_faults

WINDOW = {"created_gte": rfc3339(START), "created_lt": rfc3339(START + timedelta(hours=1))}


async def test_a_window_is_listed_oldest_first_a_page_at_a_time(fake: CardCo, client) -> None:
    """Each page holds at most `limit` objects created in [created_gte, created_lt), oldest first,
    with `created_at`; `next_cursor` continues after the last one; another account's, and objects
    created outside the window, are not listed."""
    made = []
    for n in range(3):
        made.append((await pay(client, key=f"k{n}", reference=f"ORD-{n}-a1")).json())
        fake.clock.advance(1)
    async with client_for(fake, account=LIVE_ACCOUNT, key=LIVE_KEY) as live:
        await pay(live, key="k9", reference="ORD-9-a1")
    first = (await client.get("/v1/payments", params=WINDOW | {"limit": "2"})).json()
    assert [p["id"] for p in first["data"]] == [made[0]["id"], made[1]["id"]]
    assert (first["has_more"], first["next_cursor"]) == (True, made[1]["id"])
    assert first["data"][0]["created_at"] == rfc3339(START)
    assert first["data"][0]["amount_minor"] == 4250
    rest = (await client.get("/v1/payments", params=WINDOW | {"limit": "2", "starting_after": made[1]["id"]})).json()
    assert (rest["data"], rest["has_more"], rest["next_cursor"]) == (
        [made[2] | {"created_at": rfc3339(START + timedelta(seconds=2))}], False, None)
    later = {"created_gte": rfc3339(START + timedelta(seconds=1)), "created_lt": rfc3339(START + timedelta(seconds=2))}
    assert [p["id"] for p in (await client.get("/v1/payments", params=later)).json()["data"]] == [made[1]["id"]]


async def test_every_kind_has_a_window_listing(fake: CardCo, client) -> None:
    """Payouts, refunds and payout recalls are listed by creation time like payments."""
    payment = (await pay(client, key="k1", reference="ORD-1-a1")).json()
    refund = (await client.post(f"/v1/payments/{payment['id']}/refunds", json={"client_reference": "ORD-1-r1",
                                                                         "expires_at": WINDOW["created_lt"]},
                                headers={"Idempotency-Key": "r1"})).json()
    payout = (await send_payout(client, key="p1", reference="PO-1-a1")).json()
    listed = {path: [o["id"] for o in (await client.get(path, params=WINDOW)).json()["data"]]
              for path in ("/v1/payouts", "/v1/refunds", "/v1/payout_recalls")}
    assert listed == {"/v1/payouts": [payout["id"]], "/v1/refunds": [refund["id"]], "/v1/payout_recalls": []}


@pytest.mark.parametrize("timings", [{"visibility_delay_s": 5}])
async def test_the_listing_lags_like_every_lookup(fake: CardCo, client) -> None:
    """An object still inside the visibility delay is not listed: a listing proves an absence
    only once the delay has passed."""
    payment = (await pay(client)).json()
    assert (await client.get("/v1/payments", params=WINDOW)).json()["data"] == []
    fake.clock.advance(5)
    assert [p["id"] for p in (await client.get("/v1/payments", params=WINDOW)).json()["data"]] == [payment["id"]]


@pytest.mark.parametrize("query", [
    {"created_gte": "yesterday", "created_lt": WINDOW["created_lt"]},
    {"created_gte": "2026-11-29T16:00:00", "created_lt": WINDOW["created_lt"]},
    WINDOW | {"limit": "0"},
    WINDOW | {"limit": "101"},
    WINDOW | {"starting_after": "pay_nothing"},
    {"created_gte": WINDOW["created_gte"]},
])
async def test_a_malformed_listing_is_400(client, query) -> None:
    response = await client.get("/v1/payments", params=query)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_request")


async def test_a_listing_obeys_the_list_operations_fault_rules(control, client) -> None:
    await set_faults(control, {"operation": "list_payments", "action": "rate_limit", "retry_after_s": 2})
    response = await client.get("/v1/payments", params=WINDOW)
    assert (response.status_code, response.headers["retry-after"]) == (429, "2")


async def test_an_amended_object_changes_in_place_and_a_forgotten_one_is_never_read_again(
    fake: CardCo, client, control
) -> None:
    """Control API (extension): amend changes the amount or status with no event; forget makes
    every read miss the object while the ledger keeps it."""
    payment = (await pay(client, key="k1")).json()
    lost = (await pay(client, key="k2", reference="ORD-2-a1")).json()
    amended = (await control.post(f"/objects/{payment['id']}/amend", json={"amount_minor": 1})).json()
    assert (amended["amount_minor"], amended["sequence"]) == (1, payment["sequence"])
    assert (await client.get(f"/v1/payments/{payment['id']}")).json()["amount_minor"] == 1
    assert (await control.post(f"/objects/{lost['id']}/forget")).status_code == 200
    assert (await client.get(f"/v1/payments/{lost['id']}")).status_code == 404
    assert (await client.get("/v1/payments", params={"client_reference": "ORD-2-a1"})).json() == {"data": []}
    assert [p["id"] for p in (await client.get("/v1/payments", params=WINDOW)).json()["data"]] == [payment["id"]]
    assert lost["id"] in [p["id"] for p in (await control.get("/ledger")).json()["payments"]]
    assert (await control.post("/objects/pay_nothing/forget")).status_code == 404


@OFFICIAL_CLIENT_WARNINGS
async def test_stripe_lists_payment_intents_by_created_with_cursors(stripe_client, fake: CardCo, control) -> None:
    """`GET /v1/payment_intents` with `created[gte]`/`created[lt]`, `limit`, `starting_after`
    (Stripe's list shape, newest first); a forgotten intent is not listed."""
    first = await create_intent(stripe_client, key="k1", reference="ORD-1-a1")
    fake.clock.advance(1)
    second = await create_intent(stripe_client, key="k2", reference="ORD-2-a1")
    fake.clock.advance(1)
    await create_intent(stripe_client, key="k3", reference="ORD-3-a1")
    window = {"gte": first.created, "lt": first.created + 2}
    page = await stripe_client.v1.payment_intents.list_async({"created": window, "limit": 1})
    assert ([p.id for p in page.data], page.has_more, page.object) == ([second.id], True, "list")
    rest = await stripe_client.v1.payment_intents.list_async({"created": window, "limit": 1,
                                                               "starting_after": second.id})
    assert ([p.id for p in rest.data], rest.has_more) == ([first.id], False)
    await control.post(f"/objects/{first.id}/forget")
    assert [p.id for p in (await stripe_client.v1.payment_intents.list_async({"created": window})).data] == [
        second.id]
