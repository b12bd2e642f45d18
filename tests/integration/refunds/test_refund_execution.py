"""A refund executed, reconciled and notified as the third kind of the one attempt pipeline
Seed 001: "No payment-rail network call is permitted before COMMIT
succeeds" (the effect record and Started before the CardCo call; the send gate re-derives the
digest); "A timeout is evidence of uncertainty, not proof that the provider produced no effect"
(Unknown on no answer, resolved by lookup or notification, never by a second refund). Seed 000
section 17: "A recall that fails or becomes Unknown is reconciled the same way"; "The original
payout's records stay as they are". Seed 004 "Cancellation": the refund is its own operation."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import timedelta
from typing import Any

import pytest
import respx

from gateway.clock import ManualClock
from gateway.pipeline import transitions
from gateway.pipeline.executor import Executor
from gateway.providers.cardco import adapter as refund_provider
from gateway.refunds.attempts import EXECUTOR, REFUND
from provider_fake.objects import Refund, new_id
from tests.conftest import TEST_ACCOUNT
from tests.integration.answer_support import RUINS, ruin_answers
from tests.integration.refunds.conftest import (
    Shop,
    order,
    paid_after_cancel,
    reconcile_refunds,
    refund_calls,
    refund_job,
    refund_lookups,
    refund_rows,
    refunds_taken,
    run_refund,
)

LOST = {"operation": "refund_payment", "action": "drop_response"}


async def _paid(shop: Shop) -> dict[str, Any]:
    await shop.order()
    assert (await shop.pay()).json()["state"] == "Succeeded"
    [attempt] = await shop.attempts()
    return attempt


async def _refund_requested(shop: Shop) -> dict[str, Any]:
    """A paid order and the merchant's refund decision (Allowed, grant and job committed)."""
    paid = await _paid(shop)
    response = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert response.status_code == 200, response.text
    return paid


async def _effect(shop: Shop, attempt_id: Any) -> list[str]:
    rows = await shop.services.db.fetch_all(
        "SELECT to_state FROM effect_ledger WHERE attempt_id = %(a)s ORDER BY sequence", {"a": attempt_id})
    return [row["to_state"] for row in rows]


async def test_a_merchant_refund_is_recorded_before_its_one_send_and_the_order_ends_refunded(shop: Shop) -> None:
    paid = await _refund_requested(shop)
    job = await refund_job(shop)
    assert await run_refund(shop, job) == "Succeeded"
    [call] = refund_calls(shop)
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert call["path"] == f"/v1/payments/{paid['provider_payment_id']}/refunds"
    assert call["headers"]["idempotency-key"] == "refund-ORD-5521-r1"
    assert json.loads(base64.b64decode(call["body_base64"])) == {
        "client_reference": "ORD-5521-r1",
        "expires_at": attempt["send_deadline"].isoformat().replace("+00:00", "Z")}
    assert (attempt["state"], attempt["outcome_reason"], attempt["provider_account"]) == \
        ("Succeeded", "provider.refunded", TEST_ACCOUNT)
    assert attempt["provider_refund_id"].startswith("re_") and attempt["sends"] == 1
    history = [(e["kind"], e["detail"].get("attempt_state")) for e in await refund_rows(shop, "payment_refund_history")]
    assert history == [("decision", None), ("grant", None), ("transition", "Claimed"), ("transition", "Started"),
                       ("provider_observation", "Succeeded"), ("transition", "Succeeded")]
    # Seed 001: intent persisted with the claim, EXECUTING recorded by the send gate before the call.
    assert await _effect(shop, attempt["attempt_id"]) == [
        "PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "EXECUTING",
        "EFFECT_CONFIRMED", "CERTIFIED"]
    body = await order(shop)
    assert (body["state"], body["refund"]["state"], body["refund"]["provider_refund_id"]) == \
        ("Refunded", "Succeeded", attempt["provider_refund_id"])
    assert body["refunds"]["attempts"][0]["effect"]["protocol_state"] == "CERTIFIED"
    # The payment status reads the same summary, the refund's attempt included, in its
    # one statement (payments/status.sql).
    assert (await shop.status()).json()["refund"] == body["refund"]
    keys = await shop.outbox()
    assert keys[0] == f"attempt:{paid['attempt_id']}:order-confirmation"
    assert keys[-1] == f"attempt:{paid['attempt_id']}:order-refunded"
    [event] = await shop.services.db.fetch_all("SELECT * FROM outbox_messages WHERE kind = 'order-refunded'")
    assert event["ordering_key"] == f"attempt:{paid['attempt_id']}"  # never ahead of the confirmation
    assert (event["payload"]["cause"], event["payload"]["refund_state"]) == ("merchant-request", "Succeeded")
    assert await run_refund(shop, job) == "grant.consumed"  # single use: a redelivery sends nothing
    assert len(refund_calls(shop)) == 1 and len(refunds_taken(shop)) == 1
    again = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (again.status_code, again.json()["code"]) == (409, "order.not_refundable")
    paid_again = await shop.pay()
    assert (paid_again.status_code, paid_again.json()["code"]) == (409, "order.refunded")


async def test_a_refund_claim_re_asserts_the_order_state_and_takes_nothing_once_it_changed(shop: Shop) -> None:
    """Seed 000, "Atomically Claim the Grant and the Payout": the claim
    "re-asserts everything validation relied on". Validation saw a paid order; by the claim the
    order is no longer refundable (planted in the database between the two, as no writer can do
    today): the claim takes nothing (no attempt, the grant still Issued) and CardCo hears nothing."""
    await _refund_requested(shop)
    admit = REFUND.admit

    async def admitted_then_order_changed(*args: Any) -> Any:
        admitted = await admit(*args)
        await shop.services.db.fetch_all(
            "UPDATE orders SET state = 'Refunded' WHERE order_id = 'ORD-5521' RETURNING order_id")
        return admitted

    services = shop.services
    executor = Executor(dataclasses.replace(REFUND, admit=admitted_then_order_changed), services.db, services.clock,
                        services.settings, EXECUTOR, services.http)
    assert await executor.run(await refund_job(shop)) == "order.not-refundable"
    assert await refund_rows(shop, "payment_refund_attempts") == []
    assert [g["state"] for g in await refund_rows(shop, "payment_refund_grants")] == ["Issued"]
    assert refund_calls(shop) == []


async def test_a_payment_after_cancel_is_refunded_automatically_and_the_merchant_hears_both(shop: Shop) -> None:
    """Seed 004 "Cancellation" end to end: PaidAfterCancel, its own refund sent once, Refunded; the
    merchant receives ``order-paid-after-cancel`` then ``order-refunded``, never a confirmation."""
    await paid_after_cancel(shop)
    assert "paygate_orders_paid_after_cancel 1.0" in (await shop.http.get("/metrics")).text
    assert await run_refund(shop, await refund_job(shop)) == "Succeeded"
    assert (await order(shop))["state"] == "Refunded"
    assert "paygate_orders_paid_after_cancel 0.0" in (await shop.http.get("/metrics")).text
    kinds = [row["kind"] for row in await shop.services.db.fetch_all(
        "SELECT kind FROM outbox_messages WHERE ordering_key IS NOT NULL ORDER BY message_id")]
    assert kinds == ["order-paid-after-cancel", "order-refunded"]
    [event] = await shop.services.db.fetch_all("SELECT payload FROM outbox_messages WHERE kind = 'order-refunded'")
    assert event["payload"]["cause"] == "paid-after-cancel"
    assert len(refunds_taken(shop)) == 1


async def test_a_refund_whose_response_is_lost_is_unknown_then_found_by_lookup_not_sent_again(
        shop: Shop, clock: ManualClock) -> None:
    """No answer is Unknown; no second refund while it is (409 ``order.refund_unresolved``); the
    reconciler finds it by ``<order_id>-r<N>`` and the order becomes Refunded: one refund in all."""
    await _refund_requested(shop)
    await shop.faults(LOST)
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    assert (await order(shop))["refund"]["state"] == "Unknown"
    refused = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (refused.status_code, refused.json()["code"]) == (409, "order.refund_unresolved")
    assert 'paygate_payment_refund_attempts{state="Unknown"} 1.0' in (await shop.http.get("/metrics")).text
    clock.advance(60)
    assert await reconcile_refunds(shop) == 1
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"]) == ("Succeeded", "provider.refunded")
    assert (await order(shop))["state"] == "Refunded"
    assert (len(refund_calls(shop)), len(refund_lookups(shop)), len(refunds_taken(shop))) == (1, 1, 1)


@pytest.mark.parametrize("ruin", sorted(RUINS))
async def test_an_unreadable_refund_answer_is_unknown_at_once(shop: Shop, cardco_http: respx.MockRouter,
                                                              ruin: str) -> None:
    """Seed 004: "incomplete or unreadable responses" map to Unknown: a body httpx
    cannot decode, or a connection cut mid-answer, after CardCo refunded. The refund attempt is
    Unknown as soon as the call returns, with no lease to lapse, and no second refund is allowed."""
    await _refund_requested(shop)
    ruin_answers(cardco_http, "POST", lambda path: path.endswith("/refunds"), RUINS[ruin])
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"]) == ("Unknown", "provider.no-response")
    refused = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (refused.status_code, refused.json()["code"]) == (409, "order.refund_unresolved")
    assert (len(refund_calls(shop)), len(refunds_taken(shop))) == (1, 1)


async def test_a_lost_refund_is_resolved_by_payment_refunded_and_a_duplicate_changes_nothing(shop: Shop) -> None:
    """``payment.refunded`` names the refund (docs/decisions/0021) and resolves the Unknown refund
    attempt through the pipeline's notification application; CardCo delivering it three times
    records it once (seed 004 "Notification Deduplication"): one ``order-refunded``, one refund,
    and the payment attempt's own record untouched."""
    paid = await _refund_requested(shop)
    await shop.faults(LOST, {"operation": "webhook", "action": "duplicate", "count": 2})
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    await shop.cardco.deliver_pending()  # payment.succeeded, then payment.refunded three times
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"]) == ("Succeeded", "provider.refunded")
    assert (await order(shop))["state"] == "Refunded"
    observations = [e["detail"]["action"] for e in await refund_rows(shop, "payment_refund_history")
                    if e["kind"] == "provider_observation" and e["detail"].get("source") == "notification"]
    assert observations == ["resolved"]
    assert [k for k in await shop.outbox() if k.endswith("order-refunded")] == \
        [f"attempt:{paid['attempt_id']}:order-refunded"]
    [payment] = await shop.attempts()
    assert (payment["state"], payment["provider_status"]) == ("Succeeded", "succeeded")
    assert (len(refund_calls(shop)), len(refunds_taken(shop))) == (1, 1)


async def test_a_late_payment_refunded_after_the_lookup_settled_it_is_recorded_and_ignored(
        shop: Shop, clock: ManualClock) -> None:
    """The reconciler's lookup resolves the refund first; CardCo's ``payment.refunded`` arriving
    afterwards is evidence that agrees: recorded in the refund's history, nothing written twice."""
    await _refund_requested(shop)
    await shop.faults(LOST)
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    clock.advance(60)
    assert await reconcile_refunds(shop) == 1
    await shop.cardco.deliver_pending()
    observations = [e["detail"]["action"] for e in await refund_rows(shop, "payment_refund_history")
                    if e["kind"] == "provider_observation" and e["detail"].get("source") == "notification"]
    assert observations == ["ignored"]
    assert len([k for k in await shop.outbox() if k.endswith("order-refunded")]) == 1
    assert (await order(shop))["state"] == "Refunded"


async def test_an_unconfirmed_refund_past_its_deadline_is_escalated_like_any_unknown(
        shop: Shop, clock: ManualClock) -> None:
    """A refund that cannot be confirmed (lookups find nothing, here because CardCo hides it) stays
    Unknown and, past its escalation deadline, is escalated ``payment-refund-attempt:<id>:deadline``."""
    await _refund_requested(shop)
    await shop.faults(LOST, {"operation": "list_refunds", "action": "error_500_before_effect", "times": 0})
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    clock.advance((attempt["escalation_deadline"] - clock.now()).total_seconds() + 1)
    assert await reconcile_refunds(shop) == 1
    [escalation] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations")
    assert (escalation["escalation_key"], escalation["reason"]) == \
        (f"payment-refund-attempt:{attempt['attempt_id']}:deadline", "payment-refund-deadline")
    assert escalation["details"]["order_id"] == "ORD-5521"
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert attempt["state"] == "Unknown"  # never rounded off


async def test_a_refund_request_that_drifted_from_its_effect_record_is_never_sent(
        shop: Shop, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 001, "Stable identity and exact bytes": "A second worker may resume the intent. It may
    not improvise a second payment." The refund's effect record commits with its claim; a request
    that no longer derives the same digest (here: another reference and expiry) is refused by the
    send gate before any call, left Unknown and escalated."""
    await _refund_requested(shop)
    started = transitions.mark_started

    async def started_then_drifted(*args: Any, **kwargs: Any) -> bool:
        confirmed = await started(*args, **kwargs)
        monkeypatch.setattr(refund_provider, "refund_body", lambda attempt: json.dumps(
            {"client_reference": "ORD-5521-r9", "expires_at": "2030-01-01T00:00:00Z"}).encode())
        return confirmed

    monkeypatch.setattr(transitions, "mark_started", started_then_drifted)
    assert await run_refund(shop, await refund_job(shop)) == "request.not-buildable.effect-digest-mismatch"
    assert refund_calls(shop) == []
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert attempt["state"] == "Unknown"
    keys = [e["escalation_key"] for e in await shop.services.db.fetch_all("SELECT * FROM payment_escalations")]
    assert keys == [f"payment-refund-attempt:{attempt['attempt_id']}:effect-digest-mismatch"]


async def test_a_found_refund_with_another_id_than_the_recorded_one_is_a_mismatch_and_never_recorded(
        shop: Shop, clock: ManualClock) -> None:
    """Seed 004, "Persisting the Attempt": the provider's id is checked "for equality when it is
    already set", a different id for the same attempt is escalated and "never silently replaces the
    recorded ID". The refund's accepted answer recorded CardCo's refund id; CardCo's
    listing does not show that refund yet, but another refund of the same payment, made earlier under
    the same reference: a mismatch naming the attempt and both ids, the attempt as it was."""
    paid = await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "processing", "complete_after_s": 3600},
                      {"operation": "list_refunds", "action": "not_found_for_s", "not_found_for_s": 600, "times": 0})
    assert await run_refund(shop, await refund_job(shop)) == "Started"
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    recorded = attempt["provider_refund_id"]
    other = Refund(id=new_id(Refund.id_prefix), account=TEST_ACCOUNT, client_reference="ORD-5521-r1",
                   idempotency_key="someone-else", amount_minor=4250, currency="EUR", status="succeeded",
                   created_at=clock.now() - timedelta(hours=1), payment=paid["provider_payment_id"],
                   expires_at=clock.now() + timedelta(hours=1))
    shop.cardco.store.add(other)  # older than the listing's lag: the only refund a lookup shows
    clock.advance(60)
    assert await reconcile_refunds(shop) == 1
    [after] = await refund_rows(shop, "payment_refund_attempts")
    assert (after["state"], after["provider_refund_id"]) == ("Started", recorded)
    assert recorded is not None and recorded != other.id
    [escalation] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations WHERE resolved_at IS NULL")
    assert (escalation["escalation_key"], escalation["reason"]) == \
        (f"payment-refund-attempt:{attempt['attempt_id']}:mismatch", "payment-refund-mismatch")
    assert {k: escalation["details"][k] for k in ("attempt_id", "provider_refund_id", "found_provider_refund_id")} \
        == {"attempt_id": str(attempt["attempt_id"]), "provider_refund_id": recorded,
            "found_provider_refund_id": other.id}
    assert (await order(shop))["state"] == "Paid"
    assert len(refund_calls(shop)) == 1
