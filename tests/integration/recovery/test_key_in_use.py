"""CardCo's 409 ``idempotency_key_in_use``, and Stripe's 400 ``idempotency_error``, are escalated
(docs/decisions/0009, 0047).

Our idempotency key already carrying a request with other parameters means something is badly
wrong (another system, a copied key, a drifted body): the answer proves nothing about the
attempt, so it stays Unknown, and a person is told, once per open episode, from the checkout
endpoint's send and from recovery's resends alike. End to end: the real gateway app and
PostgreSQL, the fake's own idempotency store producing the answer, one ManualClock.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from gateway.clock import ManualClock
from tests.conftest import CARDCO_URL, TEST_ACCOUNT, account_config
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import STRIPE_KEY, WorkerFactory


async def _reuse_the_key_elsewhere(shop: Shop, attempt: dict[str, Any]) -> None:
    """Someone else sends a different payment under the attempt's idempotency key, first."""
    if shop.provider == "stripe":
        response = await shop.services.http.post(f"{CARDCO_URL}/stripe/v1/payment_intents", headers={
            "Authorization": f"Bearer {STRIPE_KEY}", "Idempotency-Key": attempt["idempotency_key"]}, data={
            "amount": "999", "currency": "eur", "confirm": "true", "payment_method": "pm_card_visa",
            "metadata[client_reference]": "SOMEONE-ELSE-1"})
    else:
        response = await shop.services.http.post(f"{CARDCO_URL}/v1/payments", headers={
            "Authorization": f"Bearer {account_config(TEST_ACCOUNT)['api_key']}", "CardCo-Account": TEST_ACCOUNT,
            "Idempotency-Key": attempt["idempotency_key"], "Content-Type": "application/json",
        }, content=json.dumps({"amount_minor": 999, "currency": "EUR", "payment_method": "pm_card_visa",
                               "client_reference": "SOMEONE-ELSE-1"}))
    assert response.status_code == 200, response.text


async def _alerts(shop: Shop) -> list[dict[str, Any]]:
    rows = await shop.services.db.fetch_all(
        "SELECT dedup_key, payload FROM outbox_messages WHERE kind = 'operator-alert' ORDER BY message_id")
    return [{"dedup_key": r["dedup_key"], **r["payload"]} for r in rows]


async def test_a_key_reused_with_other_parameters_is_unknown_and_a_person_is_told(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """The checkout's send answered 409 idempotency_key_in_use records Unknown
    with its reason and opens one escalation whose alert says so; recovery's resend, answered
    409 again, joins the open episode (no second alert) and nothing is ever paid for the order."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    await _reuse_the_key_elsewhere(shop, attempt)

    paid = await shop.pay()
    assert paid.status_code == 202, paid.text
    assert (paid.json()["state"], paid.json()["outcome_reason"]) == ("Unknown", "provider.idempotency-key-in-use")
    escalations = await shop.services.db.fetch_all(
        "SELECT escalation_id, escalation_key, reason, resolved_at, details FROM payment_escalations")
    assert [(e["escalation_key"], e["reason"], e["resolved_at"]) for e in escalations] == [
        (f"attempt:{attempt['attempt_id']}:idempotency-key-in-use", "idempotency-key-in-use", None)]
    assert escalations[0]["details"]["http_status"] == {"cardco": 409, "stripe": 400}[shop.provider]
    [alert] = await _alerts(shop)
    assert (alert["dedup_key"], alert["reason"]) == (f"escalation:{escalations[0]['escalation_id']}:initial",
                                                     "idempotency-key-in-use")

    clock.advance(60)  # the first backoff step: recovery looks it up, finds nothing, resends
    assert (await worker().sweep()).outcomes == {"resent:key_in_use->Unknown": 1}
    assert len(await _alerts(shop)) == 1, "the open episode is not alerted again"
    [row] = await shop.attempts()
    assert row["state"] == "Unknown" and row["recovery_owner"] is None
    assert row["next_check_at"] == clock.now() + timedelta(
        seconds=shop.services.settings.readonly_cadence_s)  # escalated: the slower read-only cadence
    assert [p["client_reference"] for p in shop.ledger()] == ["SOMEONE-ELSE-1"]
