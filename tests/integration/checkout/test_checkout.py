"""The checkout endpoint end to end: real gateway app, real PostgreSQL, CardCo in-process through
respx, one ManualClock (seed 004, "The Checkout Endpoint" and its test matrix)."""

from __future__ import annotations

import base64
import uuid

from gateway.clock import ManualClock
from tests.integration.checkout.conftest import Shop


async def test_a_payment_that_succeeds_is_recorded_once_and_confirms_the_order(shop: Shop) -> None:
    await shop.order()
    response = await shop.pay()
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["state"] == "Succeeded" and body["attempt_number"] == 1
    assert body["client_reference"] == "ORD-5521-a1" and body["provider_payment_id"].startswith("pay_")
    assert body["status_url"] == "/v1/orders/ORD-5521/payment/status"
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)
    assert order.json()["state"] == "Paid"
    [attempt] = await shop.attempts()
    assert await shop.events(attempt["attempt_id"]) == ["send_intent", "send_result", "transition"]
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    [payment] = shop.ledger()
    assert payment["idempotency_key"] == attempt["idempotency_key"] and payment["client_reference"] == "ORD-5521-a1"


async def test_the_request_sent_is_the_stored_request_byte_for_byte(shop: Shop) -> None:
    """Seed 004 checklist 1: the attempt is written with its key, reference, body, endpoint, API
    version and account before the first send, and the send is that stored request."""
    await shop.order()
    await shop.pay()
    [attempt] = await shop.attempts()
    [sent] = shop.provider_requests()
    assert base64.b64decode(sent["body_base64"]).decode() == attempt["request_body"]
    assert sent["headers"]["idempotency-key"] == attempt["idempotency_key"]
    assert sent["headers"]["cardco-account"] == attempt["provider_account"] == "cardco:acct_store:test"
    assert sent["headers"]["cardco-version"] == attempt["api_version"]
    assert sent["headers"]["authorization"] == "[redacted]"
    assert "pm_card_visa" in attempt["request_body"] and uuid.UUID(attempt["idempotency_key"])


async def test_a_lost_response_is_unknown_never_failed_and_answers_202(shop: Shop) -> None:
    """Seed 004 matrix: "A payment with a lost response is recorded as Unknown, never Failed, and the
    endpoint returns 202 with the status URL"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    response = await shop.pay()
    assert response.status_code == 202
    assert response.headers["location"] == "/v1/orders/ORD-5521/payment/status"
    assert response.json()["state"] == "Unknown"
    assert response.json()["outcome_reason"] == "provider.transport.ReadTimeout"
    assert [p["status"] for p in shop.ledger()] == ["succeeded"], "the effect happened at the provider"
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)
    assert order.json()["state"] == "Open"


async def test_a_second_click_or_tab_reports_the_live_attempt_and_sends_nothing(shop: Shop) -> None:
    """Seed 004 matrix: "A second click, a second tab, or a browser retry while the attempt is live
    returns its status and sends nothing; the status GET never sends"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    first = await shop.pay()
    second = await shop.pay()
    polled = [await shop.status() for _ in range(3)]
    assert second.status_code == 202 and second.json()["attempt_id"] == first.json()["attempt_id"]
    assert all(p.status_code == 202 and p.json()["state"] == "Unknown" for p in polled)
    assert len(shop.provider_requests()) == 1
    assert len(await shop.attempts()) == 1


async def test_concurrent_clicks_make_one_attempt_and_one_request(shop: Shop) -> None:
    """Seed 004: the order lock turns a double click into the same attempt (real concurrency)."""
    import asyncio

    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 200})
    responses = await asyncio.gather(*(shop.pay() for _ in range(4)))
    assert {r.json()["attempt_id"] for r in responses} == {responses[0].json()["attempt_id"]}
    assert len(shop.provider_requests()) == 1
    assert len(shop.ledger()) == 1


async def test_a_decline_is_failed_and_the_next_click_starts_attempt_two_with_a_new_identity(shop: Shop) -> None:
    """API.md: after Failed or NotApplied the next POST creates attempt N+1 with a new key and reference."""
    await shop.order(payment_method="pm_card_declined")
    declined = await shop.pay()
    assert declined.status_code == 200
    assert (declined.json()["state"], declined.json()["outcome_reason"]) == ("Failed", "card_declined")
    retried = await shop.pay()
    assert retried.json()["attempt_number"] == 2 and retried.json()["client_reference"] == "ORD-5521-a2"
    first, second = await shop.attempts()
    assert first["idempotency_key"] != second["idempotency_key"]
    assert [r["headers"]["idempotency-key"] for r in shop.provider_requests()] == [
        first["idempotency_key"], second["idempotency_key"]]


async def test_a_validation_rejection_of_the_only_send_is_not_applied(shop: Shop) -> None:
    """Seed 004 matrix: "A documented validation rejection of an attempt's only send records NotApplied
    with the error, not a customer decline"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "reject_invalid"})
    response = await shop.pay()
    assert response.status_code == 200
    assert (response.json()["state"], response.json()["outcome_reason"]) == ("NotApplied", "invalid_request")
    assert shop.ledger() == []


async def test_a_rate_limited_only_send_is_not_applied_and_can_be_tried_again(shop: Shop) -> None:
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "rate_limit"})
    assert (await shop.pay()).json()["state"] == "NotApplied"
    again = await shop.pay()
    assert (again.json()["state"], again.json()["attempt_number"]) == ("Succeeded", 2)


async def test_500_malformed_and_empty_answers_are_unknown(shop: Shop) -> None:
    """Seed 004 matrix: "a malformed body, and an empty body each produce Unknown"; a 500 is indeterminate."""
    for number, action in enumerate(("error_500_after_effect", "malformed_body", "empty_body"), start=1):
        order_id = f"ORD-{number}"
        await shop.order(order_id)
        await shop.faults({"operation": "create_payment", "action": action})
        response = await shop.pay(order_id)
        assert (response.status_code, response.json()["state"]) == (202, "Unknown"), action


async def test_a_transport_failure_before_any_effect_is_still_unknown(shop: Shop) -> None:
    """Seed 004: every way a call ends without an answer is Unknown; the client cannot tell a
    timeout before the effect from one after it."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "timeout_before_effect"})
    response = await shop.pay()
    assert response.json()["state"] == "Unknown" and shop.ledger() == []


async def test_requires_action_is_shown_while_current_and_hidden_after_expiry(shop: Shop, clock: ManualClock) -> None:
    """Seed 004 matrix: "A response requiring customer action returns the provider's next action to
    the page ... an expired action is not shown"."""
    await shop.order(payment_method="pm_card_3ds")
    await shop.faults({"operation": "create_payment", "action": "requires_action", "expires_in_s": 300})
    response = await shop.pay()
    assert response.status_code == 200
    assert response.json()["state"] == "Started" and response.json()["next_action"]["type"]
    polled = await shop.status()
    assert polled.status_code == 200 and polled.json()["next_action"] == response.json()["next_action"]
    clock.advance(300)
    expired = await shop.status()
    assert expired.status_code == 202
    assert expired.json()["state"] == "Started" and expired.json()["next_action"] is None


async def test_the_status_of_a_paid_or_unknown_order_and_the_409s(shop: Shop) -> None:
    """API.md: 409 order.paid carries the succeeded attempt; 409 order.cancelled."""
    await shop.order()
    await shop.pay()
    paid = await shop.pay()
    assert paid.status_code == 409 and paid.json()["code"] == "order.paid"
    assert paid.json()["attempt"]["state"] == "Succeeded"
    await shop.order("ORD-2")
    cancelled = await shop.http.post("/v1/orders/ORD-2/cancel", headers=shop.merchant)
    assert cancelled.json()["state"] == "Cancelled"
    refused = await shop.pay("ORD-2")
    assert refused.status_code == 409 and refused.json()["code"] == "order.cancelled"
    assert len(shop.provider_requests()) == 1


async def test_other_customers_and_unknown_orders_are_404(shop: Shop) -> None:
    await shop.order()
    other = {"Authorization": f"Bearer {await shop.services.tokens.create('customer', 'cus_2')}"}
    for response in (await shop.http.post("/v1/orders/ORD-5521/payment", headers=other),
                     await shop.http.get("/v1/orders/ORD-5521/payment/status", headers=other),
                     await shop.http.get("/v1/orders/ORD-5521", headers=other),
                     await shop.pay("ORD-NOPE")):
        assert (response.status_code, response.json()["code"]) == (404, "order.not_found")
    no_attempt = await shop.status()
    assert (no_attempt.status_code, no_attempt.json()["code"]) == (404, "payment.not_found")
    assert shop.provider_requests() == []
