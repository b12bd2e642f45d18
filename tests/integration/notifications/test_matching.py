"""Matching a notification to its attempt and applying it through the one conditional transition
(seed 004, "The Notification Handler", "Escalations"), with the test matrix lines cited."""

from __future__ import annotations

import asyncio
import uuid

import psycopg

from gateway.domain.attempts import Evidence
from gateway.services import Services
from tests.integration.conftest import CARDCO_ONLY
from tests.integration.notifications.conftest import Webhooks
from tests.integration.notifications.test_deduplication import _until_waiting


async def test_an_unknown_reference_alerts_and_resolves_nothing(webhooks: Webhooks) -> None:
    """Matrix: "A notification with an unknown reference ... raises an alert and resolves nothing"."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt, client_reference="ORD-unknown-a1", event_id="evt_u1")
    assert (await webhooks.deliver(event)).status_code == 204
    [row] = await webhooks.notifications()
    assert row["attempt_id"] is None
    [episode] = await webhooks.escalations()
    assert (episode["escalation_key"], episode["reason"]) == (f"notification:{webhooks.test_account}:evt_u1:unmatched",
                                                              "unmatched-payment")
    assert episode["details"].items() >= {"client_reference": "ORD-unknown-a1", "provider_event_id": "evt_u1",
                                       "notification_event_id": row["event_id"],
                                       "provider_payment_id": event["data"]["object"]["id"]}.items()
    assert (await webhooks.reload(attempt))["state"] == "Started"
    assert len(await webhooks.outbox("operator-alert")) == 1


async def test_a_mismatched_amount_alerts_and_resolves_nothing(webhooks: Webhooks) -> None:
    """Matrix: "... a mismatched amount ... raises an alert and resolves nothing"."""
    attempt = await webhooks.attempt()
    assert (await webhooks.deliver(webhooks.payment_event(attempt, event_id="evt_m1", amount_minor=4251))).status_code == 204
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"attempt:{attempt['attempt_id']}:mismatch:evt_m1"
    assert episode["details"]["attempt_id"] == str(attempt["attempt_id"])
    assert episode["details"]["provider_event_id"] == "evt_m1" and episode["details"]["evidence_amount_minor"] == 4251
    assert (await webhooks.reload(attempt))["state"] == "Started"


async def test_the_wrong_account_alerts_and_a_test_secret_never_resolves_a_live_attempt(webhooks: Webhooks) -> None:
    """Matrix: "... or the wrong account or environment raises an alert and resolves nothing";
    the rule: "a test-mode secret can never resolve a live attempt"."""
    live = await webhooks.attempt(account=webhooks.live_account)
    # Signed by the test account's secret: its account is test, whatever the payload says.
    assert (await webhooks.deliver(webhooks.payment_event(live, event_id="evt_w1"), webhooks.test_account)).status_code == 204
    assert (await webhooks.reload(live))["state"] == "Started"
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"notification:{webhooks.test_account}:evt_w1:unmatched"


async def test_the_same_client_reference_in_test_and_live_does_not_collide(webhooks: Webhooks) -> None:
    """Matrix: "The same client reference in two provider accounts, such as test and live, does not
    collide, and a notification or lookup for one account never resolves the other's attempt"."""
    test_attempt = await webhooks.attempt("ORD-twin")
    # Order ids are global, so the live twin gets the test attempt's reference directly.
    live_attempt = await webhooks.attempt("ORD-twin-live", account=webhooks.live_account)
    await webhooks.services.db.fetch_one(
        "UPDATE payment_attempts SET client_reference = %(r)s WHERE attempt_id = %(a)s RETURNING 1",
        {"r": test_attempt["client_reference"], "a": live_attempt["attempt_id"]})
    assert (await webhooks.deliver(webhooks.payment_event(test_attempt), webhooks.live_account)).status_code == 204
    assert (await webhooks.reload(live_attempt))["state"] == "Succeeded"
    assert (await webhooks.reload(test_attempt))["state"] == "Started"


async def test_a_refund_after_succeeded_is_recorded_not_a_contradiction(webhooks: Webhooks) -> None:
    """Matrix: "a later refund notification for a Succeeded attempt is recorded without being
    treated as a contradiction"; "A refund effect queued after a confirmation for the same attempt
    is not delivered before it" (its outbox row is ordered after the confirmation)."""
    attempt = await webhooks.attempt()
    succeeded = webhooks.payment_event(attempt, id="pay_r1", sequence=2)
    refunded = webhooks.payment_event(attempt, type_="payment.refunded", id="pay_r1", sequence=3)
    for event in (succeeded, refunded):
        assert (await webhooks.deliver(event)).status_code == 204
    row = await webhooks.reload(attempt)
    assert (row["state"], row["provider_status"]) == ("Succeeded", "refunded")
    assert await webhooks.escalations() == []
    aid = attempt["attempt_id"]
    assert await webhooks.outbox() == [f"attempt:{aid}:order-confirmation", f"attempt:{aid}:refund-notice"]
    rows = await webhooks.services.db.fetch_all("SELECT ordering_key FROM outbox_messages ORDER BY message_id")
    assert {r["ordering_key"] for r in rows} == {f"attempt:{aid}"}


async def test_failed_after_succeeded_escalates_instead_of_overwriting(webhooks: Webhooks) -> None:
    """Seed 004: "a genuinely incompatible outcome, such as 'failed' for an attempt recorded as
    Succeeded, raises an escalation keyed by this notification instead of overwriting"."""
    attempt = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(attempt, id="pay_f1"))
    assert (await webhooks.deliver(webhooks.payment_event(attempt, type_="payment.failed", id="pay_f1",
                                                 event_id="evt_f1", sequence=3))).status_code == 204
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"attempt:{attempt['attempt_id']}:contradiction:evt_f1"


async def test_no_or_a_wrong_reference_still_matches_by_the_recorded_provider_payment_id(webhooks: Webhooks) -> None:
    """Matrix: "A notification with no or a wrong client reference but a recorded provider payment
    ID matches its attempt"."""
    attempt = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(attempt, type_="payment.processing", id="pay_k1", sequence=1))
    assert (await webhooks.reload(attempt))["provider_payment_id"] == "pay_k1"
    await webhooks.deliver(webhooks.payment_event(attempt, id="pay_k1", client_reference=None, sequence=2))
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    other = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(other, type_="payment.processing", id="pay_k2", sequence=1))
    await webhooks.deliver(webhooks.payment_event(other, id="pay_k2", client_reference="ORD-wrong-a9", sequence=2))
    assert (await webhooks.reload(other))["state"] == "Succeeded"
    assert await webhooks.escalations() == []


async def test_a_different_provider_payment_id_is_a_contradiction_and_replaces_nothing(webhooks: Webhooks) -> None:
    """Matrix: "one carrying a different provider payment ID raises a contradiction escalation and
    replaces nothing"."""
    attempt = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(attempt, type_="payment.processing", id="pay_c1", sequence=1))
    await webhooks.deliver(webhooks.payment_event(attempt, id="pay_c2", event_id="evt_c2"))
    row = await webhooks.reload(attempt)
    assert (row["state"], row["provider_payment_id"]) == ("Started", "pay_c1")
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"attempt:{attempt['attempt_id']}:contradiction:evt_c2"


async def _identity_conflict(webhooks: Webhooks) -> tuple[dict, dict, dict]:  # type: ignore[type-arg]
    by_reference, by_payment_id = await webhooks.attempt(), await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(by_payment_id, type_="payment.processing", id="pay_owner", sequence=1))
    event = webhooks.payment_event(by_reference, id="pay_owner", event_id="evt_ic1")
    assert (await webhooks.deliver(event)).status_code == 204
    return by_reference, by_payment_id, event


async def test_reference_and_payment_id_naming_different_attempts_is_an_identity_conflict(webhooks: Webhooks) -> None:
    """Matrix: "A notification whose client reference and provider payment ID identify different
    attempts is recorded, raises an identity-conflict escalation, and is applied to neither"; "An
    identity-conflict escalation records both attempt IDs and the notification's identifiers"."""
    by_reference, by_payment_id, _ = await _identity_conflict(webhooks)
    rows = await webhooks.notifications()
    assert rows[-1]["attempt_id"] is None and rows[-1]["notification_key"] == "evt_ic1"
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"notification:{webhooks.test_account}:evt_ic1:identity-conflict"
    assert episode["attempt_id"] == by_reference["attempt_id"]
    assert episode["details"].items() >= {
        "reference_attempt_id": str(by_reference["attempt_id"]),
        "provider_payment_id_attempt_id": str(by_payment_id["attempt_id"]),
        "client_reference": by_reference["client_reference"], "provider_payment_id": "pay_owner",
        "provider_event_id": "evt_ic1", "notification_event_id": rows[-1]["event_id"]}.items()
    assert (await webhooks.reload(by_reference))["state"] == "Started"
    assert (await webhooks.reload(by_payment_id))["state"] == "Started"


async def test_closing_an_identity_conflict_without_reconciliation_changes_neither(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """Matrix: "Closing an identity-conflict escalation without reconciliation changes neither attempt"."""
    by_reference, by_payment_id, _ = await _identity_conflict(webhooks)
    before = [await webhooks.reload(a) for a in (by_reference, by_payment_id)]
    [episode] = await webhooks.escalations()
    response = await webhooks.http.post(f"/v1/ops/escalations/{episode['escalation_id']}/resolve",
                                        headers=operator, json={"note": "investigated elsewhere"})
    assert response.status_code == 200, response.text
    assert [await webhooks.reload(a) for a in (by_reference, by_payment_id)] == before


async def test_a_redelivered_unmatched_or_mismatched_notification_alerts_once(webhooks: Webhooks) -> None:
    """Matrix: "A redelivered unmatched or mismatched notification alerts a person once, while two
    distinct mismatched notifications for one attempt alert separately"."""
    attempt = await webhooks.attempt()
    unmatched = webhooks.payment_event(attempt, client_reference="ORD-nobody-a1")
    mismatched = webhooks.payment_event(attempt, amount_minor=1)
    other_mismatch = webhooks.payment_event(attempt, amount_minor=2)
    for event in (unmatched, unmatched, mismatched, mismatched, other_mismatch):
        assert (await webhooks.deliver(event)).status_code == 204
    keys = [e["escalation_key"] for e in await webhooks.escalations()]
    aid = attempt["attempt_id"]
    assert keys == [f"notification:{webhooks.test_account}:{unmatched['id']}:unmatched",
                    f"attempt:{aid}:mismatch:{mismatched['id']}", f"attempt:{aid}:mismatch:{other_mismatch['id']}"]
    assert len(await webhooks.outbox("operator-alert")) == 3


@CARDCO_ONLY  # a CardCo payout without ids; Stripe's carry both
async def test_an_unkeyed_unidentified_unmatched_notification_twice_alerts_once(webhooks: Webhooks) -> None:
    """Matrix: "An unkeyed unmatched notification with no payment ID or reference, delivered twice,
    raises one alert for the account's open episode". CardCo always sends a payment id, so this
    one is a payout notification with neither identifier usable (blank)."""
    payout = {"type": "payout.paid", "data": {"object": {"object": "payout", "id": "po_x", "client_reference": " ",
                                                           "amount_minor": 5, "currency": "EUR", "status": "paid"}}}
    payout["data"]["object"]["id"] = " "  # type: ignore[index]
    for _ in range(2):
        assert (await webhooks.deliver(payout)).status_code == 204
    assert len(await webhooks.notifications()) == 2
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"notification:{webhooks.test_account}:unmatched-unidentified"
    assert len(await webhooks.outbox("operator-alert")) == 1


async def test_a_notification_before_the_endpoint_records_its_timeout_wins(webhooks: Webhooks) -> None:
    """Matrix: "A notification that arrives before the endpoint records its timeout wins: the late
    Unknown write does not overwrite Succeeded"."""
    attempt = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(attempt))
    late = Evidence(finding="unknown", provider_account=webhooks.test_account, reason="transport.timeout")
    await webhooks.services.attempts.record_response(attempt["attempt_id"], late, actor="endpoint")
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert await webhooks.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_non_final_evidence_moves_unknown_to_started_and_shows_the_action(webhooks: Webhooks) -> None:
    """Matrix: "An Unknown attempt found to require customer action moves to Started and shows the
    action to the customer"."""
    attempt = await webhooks.set_unknown(await webhooks.attempt())
    action = {"type": "redirect_to_url", "url": "https://cardco.test/3ds/1", "expires_at": "2026-11-29T16:10:00Z"}
    await webhooks.deliver(webhooks.payment_event(attempt, type_="payment.requires_action", next_action=action))
    row = await webhooks.reload(attempt)
    shown = row["next_action"]  # the provider's own action: Stripe nests the URL under its type
    url = shown["redirect_to_url"]["url"] if webhooks.provider == "stripe" else shown["url"]
    assert (row["state"], row["provider_status"], shown["type"], url) == (
        "Started", "requires_action", "redirect_to_url", "https://cardco.test/3ds/1")


async def test_a_concurrent_writer_makes_the_notification_apply_to_the_new_version(
        webhooks: Webhooks, services: Services) -> None:
    """Matrix: "A concurrent writer changing the attempt while a notification is applied makes the
    notification reapply against the new version, or stop at a final winner, without rolling back
    its record". A writer holding the order lock moves the attempt to Unknown (new version) while
    the notification waits; the notification then applies to Unknown and wins. In a second attempt
    the writer records Failed first: the notification stops at that final winner (escalated as a
    contradiction, not overwritten) and its record stays."""
    for winner, expected in (("Unknown", "Succeeded"), ("Failed", "Failed")):
        attempt = await webhooks.attempt()
        async with await psycopg.AsyncConnection.connect(services.settings.database_url) as writer:
            await writer.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (attempt["order_id"],))
            delivery = asyncio.create_task(webhooks.deliver(webhooks.payment_event(attempt)))
            await _until_waiting(services, 1)
            await writer.execute("UPDATE payment_attempts SET state = %s, outcome_reason = 'card_declined',"
                                 " version = version + 1 WHERE attempt_id = %s", (winner, attempt["attempt_id"]))
            await writer.commit()
        assert (await delivery).status_code == 204
        assert (await webhooks.reload(attempt))["state"] == expected
        rows = [r for r in await webhooks.notifications() if r["attempt_id"] == attempt["attempt_id"]]
        assert len(rows) == 1
    assert [e["reason"] for e in await webhooks.escalations()] == ["contradiction"]


async def test_an_unknown_attempt_id_is_never_invented(webhooks: Webhooks) -> None:
    """A reference that looks like one of ours but names no attempt is unmatched, not created."""
    await webhooks.deliver(webhooks.payment_event(None, client_reference=f"ORD-{uuid.uuid4().hex[:6]}-a1"))
    assert (await webhooks.notifications())[0]["attempt_id"] is None
