"""``POST /v1/orders/{id}/refund``: a merchant's full refund of its paid order,
on the same refund operation a payment after cancellation uses. Seed 000 section 17: "its own
request, its own decision, its own authority"; like a recall (docs/decisions/0015), a request that
cannot be decided at all (no paid payment, another refund still open) writes no decision."""

from __future__ import annotations

import pytest

from gateway.clock import ManualClock
from gateway.refunds.decisions import expire_unused_grants
from tests.integration.metrics_support import scrape
from tests.integration.refunds.conftest import Shop, found_succeeded, order, refund_rows, started_then_cancelled


async def _paid(shop: Shop) -> None:
    await shop.order()
    assert (await shop.pay()).json()["state"] == "Succeeded"


async def test_a_merchant_refund_of_a_paid_order_is_an_allowed_decision_with_its_grant_and_job(shop: Shop) -> None:
    await _paid(shop)
    response = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert response.status_code == 200, response.text
    decision = response.json()
    assert (decision["operation"], decision["cause"], decision["outcome"], decision["reason"],
            decision["actor_id"]) == ("payment.refund", "merchant-request", "Allowed", "refund.allowed",
                                      "merchant:merchant_1")
    [attempt] = await shop.attempts()
    assert decision["provider_payment_id"] == attempt["provider_payment_id"]
    assert decision["grant"]["refund_number"] == 1
    jobs = await shop.services.db.fetch_all("SELECT payload FROM outbox_messages WHERE kind = 'payment-refund-job'")
    assert [j["payload"]["grant_id"] for j in jobs] == [decision["grant"]["grant_id"]]
    assert set(jobs[0]["payload"]) == {"order_id", "grant_id", "correlation_id", "deliver_at", "dedup_key", "kind"}
    body = await order(shop)
    assert (body["state"], body["refund"]["state"], body["refund"]["cause"]) == ("Paid", "Requested",
                                                                                  "merchant-request")
    assert [d["decision_id"] for d in body["refunds"]["decisions"]] == [decision["decision_id"]]
    history = [(e["kind"], e["detail"].get("event")) for e in await refund_rows(shop, "payment_refund_history")]
    assert history == [("decision", None), ("grant", "issued")]


async def test_a_second_refund_while_one_is_open_is_refused_with_no_decision(shop: Shop) -> None:
    """No second refund while one might still take effect (``order.refund_unresolved``)."""
    await _paid(shop)
    assert (await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})).status_code == 200
    again = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (again.status_code, again.json()["code"]) == (409, "order.refund_unresolved")
    assert len(await refund_rows(shop, "payment_refund_decisions")) == 1


async def test_an_expired_unclaimed_grant_no_longer_blocks_a_new_decision(shop: Shop, clock: ManualClock) -> None:
    """A grant whose window lapsed unclaimed authorizes nothing: it is expired under the lock and a
    new decision allocates refund number 2 (seed 000 section 16: "An attempt number allocated atomically")."""
    await _paid(shop)
    await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    clock.advance(shop.services.settings.payout_grant_window_s)
    again = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert again.status_code == 200, again.text
    assert again.json()["grant"]["refund_number"] == 2
    assert [g["state"] for g in await refund_rows(shop, "payment_refund_grants")] == ["Expired", "Issued"]


@pytest.mark.parametrize("state", ["Open", "CancelRequested", "Cancelled"])
async def test_an_order_without_a_taken_payment_is_not_refundable_and_nothing_is_written(
        shop: Shop, state: str) -> None:
    await shop.order()
    if state != "Open":
        if state == "CancelRequested":
            await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
        await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert (await order(shop))["state"] == state
    response = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (response.status_code, response.json()["code"]) == (409, "order.not_refundable")
    assert await refund_rows(shop, "payment_refund_decisions") == []
    assert await shop.services.db.fetch_all("SELECT 1 FROM payment_refunds") == []


async def test_only_the_orders_merchant_may_ask_and_the_body_names_nothing(shop: Shop) -> None:
    """API.md Conventions: another merchant's or a customer's request is 404 (never revealing the
    order); a body with fields is 422 ``request.invalid``; nothing is written for any of them."""
    await _paid(shop)
    other = await shop.services.tokens.create("merchant", "merchant_2")
    for headers in ({"Authorization": f"Bearer {other}"}, shop.customer):
        response = await shop.http.post("/v1/orders/ORD-5521/refund", headers=headers, json={})
        assert (response.status_code, response.json()["code"]) == (404, "order.not_found")
    bad = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={"amount_minor": 1})
    assert (bad.status_code, bad.json()["code"]) == (422, "request.invalid")
    missing = await shop.http.post("/v1/orders/ORD-0000/refund", headers=shop.merchant, json={})
    assert missing.status_code == 404
    assert await refund_rows(shop, "payment_refund_decisions") == []


async def test_a_paid_after_cancel_order_is_not_cancelled_again_and_takes_no_new_payment(shop: Shop) -> None:
    """A PaidAfterCancel order answers a repeated cancellation with itself, unchanged."""
    await found_succeeded(shop, await started_then_cancelled(shop))
    again = await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert (again.status_code, again.json()["state"]) == (200, "PaidAfterCancel")
    refused = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (refused.status_code, refused.json()["code"]) == (409, "order.refund_unresolved")


async def test_a_merchant_refund_whose_job_never_ran_is_expired_and_escalated_until_asked_again(
        shop: Shop, clock: ManualClock) -> None:
    """A grant whose window closes unclaimed (its job lost with the broker, say) authorizes nothing
    (seed 000 section 6) and its refund never happened: the refund sweep expires it, the order's
    ``refund`` says ``Expired`` rather than ``Requested``, a person is told once
    (``order:<id>:refund-grant-expired``), and the merchant's next request closes that episode.
    /metrics counts it among the grants issued but never consumed, and the open
    episode under the pipeline's kind ``payment_refund``."""
    await _paid(shop)
    await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert await expire_unused_grants(shop.services.db, clock, reminder_interval_s=900) == 0
    refund = {"operation": "payment.refund"}
    assert (await scrape(shop.http)).value("paygate_payout_grants_expired_unused", **refund) == 0
    clock.advance(shop.services.settings.payout_grant_window_s)
    for expected in (1, 0):
        assert await expire_unused_grants(shop.services.db, clock, reminder_interval_s=900) == expected
    seen = await scrape(shop.http)
    assert seen.value("paygate_payout_grants_expired_unused", **refund) == 1
    assert seen.value("paygate_payout_escalations_open", kind="payment_refund",
                      reason="payment-refund-grant-expired-unused") == 1
    assert (await order(shop))["refund"]["state"] == "Expired"
    # The payment status reads the same summary in its one statement (payments/status.sql).
    assert (await shop.status()).json()["refund"] == (await order(shop))["refund"]
    [episode] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations")
    assert (episode["escalation_key"], episode["reason"], episode["resolved_at"]) == \
        ("order:ORD-5521:refund-grant-expired", "payment-refund-grant-expired-unused", None)
    again = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert again.json()["grant"]["refund_number"] == 2
    [episode] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations")
    assert episode["resolved_at"] is not None
