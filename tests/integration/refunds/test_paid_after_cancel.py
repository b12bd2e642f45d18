"""A payment that succeeds after its order was cancelled. Seed 004,
"Cancellation": "a cancellation that commits just after a send intent cannot recall the dispatch
that intent already authorized. The attempt is then left to resolve through reconciliation, and if
it turns out to have succeeded, the refund is its own operation"; matrix: "one committed just after
the intent does not stop that dispatch, and the attempt resolves through reconciliation, with a
refund as a separate operation if it succeeded". Seed 000 section 17: the refund has "its own
request, its own decision, its own authority"; "The original ... records stay as they are"."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.domain.attempts import Evidence
from gateway.refunds.settlement import raise_owed
from tests.conftest import TEST_ACCOUNT
from tests.integration.checkout.test_checkout_failures import _wait_until_blocked
from tests.integration.refunds.conftest import Shop, found_succeeded, order, refund_rows, started_then_cancelled


async def test_a_cancellation_racing_the_send_ends_paid_after_cancel_with_its_own_refund(shop: Shop) -> None:
    """Real concurrency: the customer's payment is in flight at CardCo (its intent committed) when
    the merchant's cancellation commits. The dispatch is not recalled and CardCo takes the money;
    the order becomes PaidAfterCancel (never Paid), the merchant gets ``order-paid-after-cancel``
    instead of an ordinary confirmation, and a refund decision with its grant and job commits in
    the same transaction as the success."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 300})
    paying = asyncio.create_task(shop.pay())
    for _ in range(200):  # until the request is at CardCo: the send intent has committed
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    cancelled = await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert cancelled.json()["state"] == "CancelRequested"
    paid = await paying
    assert (paid.status_code, paid.json()["state"]) == (200, "Succeeded")
    [attempt] = await shop.attempts()
    body = await order(shop)
    assert body["state"] == "PaidAfterCancel"
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-paid-after-cancel",
                                   f"payment-refund-grant:{body['refund']['grant_id']}:job"]
    [decision] = await refund_rows(shop, "payment_refund_decisions")
    assert (decision["cause"], decision["outcome"], decision["reason"], decision["actor_id"]) == \
        ("paid-after-cancel", "Allowed", "refund.allowed", "system:cancellation")
    assert (decision["paid_attempt_id"], decision["provider_payment_id"]) == \
        (attempt["attempt_id"], attempt["provider_payment_id"])
    [grant] = await refund_rows(shop, "payment_refund_grants")
    assert (grant["state"], grant["refund_number"], grant["audience"]) == ("Issued", 1, "payment-refund-executor")
    assert body["refund"] | {"grant_id": None, "decision_id": None} == {
        "refund_number": 1, "cause": "paid-after-cancel", "state": "Requested", "decision_id": None,
        "grant_id": None, "attempt_id": None, "client_reference": None, "provider_refund_id": None,
        "outcome_reason": None}
    status = await shop.status()
    assert status.json()["state"] == "Succeeded" and status.json()["refund"] == body["refund"]
    assert attempt["state"] == "Succeeded"  # the payment's own record stays as it is
    again = await shop.pay()
    assert (again.status_code, again.json()["code"]) == (409, "order.cancelled")


async def test_a_success_found_by_reconciliation_after_cancel_is_settled_the_same_way(shop: Shop) -> None:
    """"The attempt is then left to resolve through reconciliation": a recovery lookup that finds
    the payment succeeded settles the order PaidAfterCancel, never Paid, with one refund decision,
    and applying the same evidence again (a late notification) decides nothing twice."""
    started = await started_then_cancelled(shop)
    for _ in ("a lookup", "a late notification of the same"):
        await found_succeeded(shop, started)
    assert (await order(shop))["state"] == "PaidAfterCancel"
    assert [d["cause"] for d in await refund_rows(shop, "payment_refund_decisions")] == ["paid-after-cancel"]
    keys = await shop.outbox()
    assert f"attempt:{started['attempt_id']}:order-paid-after-cancel" in keys
    assert not [key for key in keys if key.endswith(":order-confirmation")]


async def test_an_uncancelled_order_is_still_paid_with_an_ordinary_confirmation(shop: Shop) -> None:
    """The contract stays: an Open order whose payment succeeds is Paid, confirmed, and owes no refund."""
    await shop.order()
    assert (await shop.pay()).json()["state"] == "Succeeded"
    body = await order(shop)
    assert (body["state"], body["refund"]) == ("Paid", None)
    [attempt] = await shop.attempts()
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    assert await refund_rows(shop, "payment_refund_decisions") == []


async def test_a_paid_after_cancel_payment_without_an_id_escalates_the_refund_owed(shop: Shop) -> None:
    """A success whose provider payment id is unknown cannot be named to CardCo: the refund is
    Deferred (``context.unavailable``), and the refund sweep escalates the money taken on a
    cancelled order (``order:<id>:refund-owed``, once per open episode) rather than leave it."""
    started = await started_then_cancelled(shop)
    await found_succeeded(shop, started, provider_payment_id=None)
    [decision] = await refund_rows(shop, "payment_refund_decisions")
    assert (decision["outcome"], decision["reason"]) == ("Deferred", "context.unavailable")
    assert await refund_rows(shop, "payment_refund_grants") == []
    for _ in range(2):
        await raise_owed(shop.services.db, shop.services.clock, reminder_interval_s=900)
    [escalation] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations")
    assert (escalation["escalation_key"], escalation["reason"], escalation["attempt_id"]) == \
        ("order:ORD-5521:refund-owed", "refund-owed", started["attempt_id"])


async def test_a_refund_under_way_or_a_paid_order_owes_no_escalation(shop: Shop, clock: ManualClock) -> None:
    """Only a cancelled order's money with no refund under way is escalated: an Issued grant inside
    its window is under way; once it lapses unclaimed (its job lost) the order is escalated."""
    started = await started_then_cancelled(shop)
    await found_succeeded(shop, started)
    assert await raise_owed(shop.services.db, shop.services.clock, reminder_interval_s=900) == 0
    clock.advance(shop.services.settings.payout_grant_window_s)
    assert await raise_owed(shop.services.db, shop.services.clock, reminder_interval_s=900) == 1


async def test_an_owed_refund_behind_more_than_a_page_of_refunds_under_way_is_escalated(
        shop: Shop, clock: ManualClock) -> None:
    """Seed 004 "Cancellation": the money taken after a cancellation is refunded as its own
    operation; "Escalations": what cannot be resolved is a person's question. 101 older
    cancelled orders whose refund is under way (an Issued grant inside its window) fill more than
    the sweep's page of 100; the one newer order whose refund is owed (Deferred: its payment's id is
    unknown) is still escalated ``order:<id>:refund-owed``, and the ones under way are not."""
    for n in range(101):
        await found_succeeded(shop, await started_then_cancelled(shop, f"ORD-W{n:03}"), f"pay_{n}")
    clock.advance(1)
    await found_succeeded(shop, await started_then_cancelled(shop, "ORD-OWED"), provider_payment_id=None)
    assert await raise_owed(shop.services.db, clock, reminder_interval_s=900) == 1
    escalations = await shop.services.db.fetch_all("SELECT escalation_key FROM payment_escalations")
    assert [e["escalation_key"] for e in escalations] == ["order:ORD-OWED:refund-owed"]
    assert await raise_owed(shop.services.db, clock, reminder_interval_s=900) == 0


async def test_a_failed_payment_after_cancel_completes_the_cancellation_with_no_refund(shop: Shop) -> None:
    """Only a payment that succeeded is refunded; a failed one completes the cancellation."""
    started = await started_then_cancelled(shop)
    await shop.services.attempts.apply_evidence(started["attempt_id"], Evidence(
        finding="failed", provider_account=TEST_ACCOUNT, amount_minor=4250, currency="EUR"),
        actor="recovery-1", kind="lookup")
    assert (await order(shop))["state"] == "Cancelled"
    assert await refund_rows(shop, "payment_refund_decisions") == []


@pytest.mark.parametrize("first", ["start", "cancel"])
async def test_a_cancellation_and_the_started_transition_racing_on_the_order_lock(
        shop: Shop, database_url: str, first: str) -> None:
    """Real concurrency on the order row: both writers queue behind a held lock (in the order
    ``first`` says) and run when it is released. A cancellation committed first prevents the send
    (no intent, seed 004 matrix); one committed just after the intent lets the dispatch stand, and
    its success makes the order PaidAfterCancel with its own refund, never Paid."""
    await shop.order()
    attempts = shop.services.attempts
    attempt = await attempts.get_or_create_live("ORD-5521", "cus_1")
    holder = await psycopg.AsyncConnection.connect(database_url)
    await holder.execute("SELECT 1 FROM orders WHERE order_id = 'ORD-5521' FOR NO KEY UPDATE")
    steps = {"start": lambda: attempts.mark_started(attempt),
             "cancel": lambda: shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)}
    tasks = {}
    for name in (first, *(set(steps) - {first})):
        tasks[name] = asyncio.create_task(steps[name]())
        await _wait_until_blocked(shop, len(tasks))
    await holder.rollback()
    await holder.close()
    started, cancelled = await tasks["start"], await tasks["cancel"]
    assert cancelled.json()["state"] == "CancelRequested"  # the attempt existed: the cancel only requests
    if first == "cancel":  # a cancellation committed before the Started transition prevents the send
        assert started is None and await shop.events(attempt["attempt_id"]) == []
        return
    assert started is not None and await shop.events(attempt["attempt_id"]) == ["send_intent"]
    await attempts.apply_evidence(started["attempt_id"], Evidence(
        finding="succeeded", provider_account=TEST_ACCOUNT, provider_id="pay_1", amount_minor=4250,
        currency="EUR"), actor="endpoint", kind="send_result")
    assert (await order(shop))["state"] == "PaidAfterCancel"
    assert [d["cause"] for d in await refund_rows(shop, "payment_refund_decisions")] == ["paid-after-cancel"]
