"""``POST /v1/ops/notifications/{event_id}/apply`` (API.md "Operations", "Precise details"; seed
004, "The Notification Handler": reconciliation applies a stored notification "through the same
conditional transitions, effect-keyed outbox rows, and escalation resolution as normal handling")."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.integration.conftest import CARDCO_ONLY
from tests.integration.notifications.conftest import Webhooks


async def apply(webhooks: Webhooks, operator: dict[str, str], event_id: object, attempt: dict[str, Any]) -> httpx.Response:
    return await webhooks.http.post(f"/v1/ops/notifications/{event_id}/apply", headers=operator,
                                    json={"attempt_id": str(attempt["attempt_id"])})


async def test_a_stored_unmatched_notification_applied_by_reconciliation_resolves_its_escalation(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """Matrix: "A stored unmatched notification, after its reference problem is corrected, is
    applied by reconciliation through the normal conditional transition and resolves its escalation"."""
    attempt = await webhooks.attempt()
    event = webhooks.payment_event(attempt, client_reference="ORD-typo-a1", event_id="evt_late_1")
    await webhooks.deliver(event)
    [episode] = await webhooks.escalations()
    response = await apply(webhooks, operator, "evt_late_1", attempt)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["state"], body["resolved_escalations"]) == ("Succeeded", [episode["escalation_id"]])
    row = await webhooks.reload(attempt)
    assert (row["state"], row["provider_payment_id"]) == ("Succeeded", event["data"]["object"]["id"])
    assert await webhooks.outbox("order-confirmation") == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    assert [e["resolved_at"] is not None for e in await webhooks.escalations()] == [True]
    # Not pretended newly delivered: still one notification row, attached by its own record.
    assert len(await webhooks.notifications()) == 1
    applied = await webhooks.services.db.fetch_one("SELECT attempt_id, applied_by FROM notification_applications")
    assert applied == {"attempt_id": attempt["attempt_id"], "applied_by": "operator-ops_1"}
    again = await apply(webhooks, operator, "evt_late_1", attempt)
    assert (again.status_code, again.json()["code"]) == (409, "notification.already_applied")


@CARDCO_ONLY  # Stripe events always carry an id
async def test_an_unkeyed_notification_is_named_by_its_numeric_id(webhooks: Webhooks, operator: dict[str, str]) -> None:
    """API.md: "or, for a notification stored without one, the gateway's numeric notification_event_id".
    Two unkeyed unmatched notifications share the reference's episode, which closes only when
    both are applied."""
    first, second = await webhooks.attempt(), await webhooks.attempt()
    for attempt in (first, second):
        await webhooks.deliver(webhooks.payment_event(attempt, event_id=None, client_reference="ORD-lost-a1"))
    rows = await webhooks.notifications()
    assert {r["detail"]["escalation_key"] for r in rows} == {f"notification:{webhooks.test_account}:{r['detail']['provider_object_id']}:unmatched" for r in rows}
    assert (await apply(webhooks, operator, rows[0]["event_id"], first)).status_code == 200
    assert (await apply(webhooks, operator, rows[1]["event_id"], second)).status_code == 200
    assert [(await webhooks.reload(a))["state"] for a in (first, second)] == ["Succeeded", "Succeeded"]
    assert all(e["resolved_at"] is not None for e in await webhooks.escalations())


@CARDCO_ONLY  # unkeyed: Stripe events always carry an id
async def test_a_coarse_episode_closes_only_when_every_notification_behind_it_is_applied(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """Seed 004, "Escalations": every unidentified notification joins the account's one open
    episode and "the operator works through the stored notifications behind it"."""
    attempt = await webhooks.attempt()
    unkeyed = webhooks.payment_event(attempt, event_id=None, client_reference=None)
    for _ in range(2):  # unkeyed: two rows, one episode named by the payment id
        await webhooks.deliver(unkeyed)
    rows = await webhooks.notifications()
    [episode] = await webhooks.escalations()
    assert {r["detail"]["escalation_key"] for r in rows} == {episode["escalation_key"]}
    response = await apply(webhooks, operator, rows[0]["event_id"], attempt)
    assert response.json()["resolved_escalations"] == []  # the second one still waits
    response = await apply(webhooks, operator, rows[1]["event_id"], attempt)
    assert response.status_code == 200 and len(response.json()["resolved_escalations"]) == 1


async def test_an_identity_conflict_is_resolved_by_applying_to_the_owner(webhooks: Webhooks, operator: dict[str, str]) -> None:
    """Seed 004: resolving an identity conflict means deciding which attempt owns the provider
    record, then applying the stored notification through the ordinary transaction."""
    by_reference, owner = await webhooks.attempt(), await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(owner, type_="payment.processing", id="pay_own", sequence=1))
    await webhooks.deliver(webhooks.payment_event(by_reference, id="pay_own", event_id="evt_conf", amount_minor=4250))
    response = await apply(webhooks, operator, "evt_conf", owner)
    assert response.status_code == 200, response.text
    assert (await webhooks.reload(owner))["state"] == "Succeeded"
    assert (await webhooks.reload(by_reference))["state"] == "Started"
    assert all(e["resolved_at"] is not None for e in await webhooks.escalations())


async def test_refusals_have_stable_codes(webhooks: Webhooks, operator: dict[str, str]) -> None:
    attempt = await webhooks.attempt()
    live = await webhooks.attempt(account=webhooks.live_account)
    await webhooks.deliver(webhooks.payment_event(attempt, event_id="evt_matched"))
    await webhooks.deliver(b"not json")
    unreadable = (await webhooks.notifications())[-1]["event_id"]
    await webhooks.deliver(webhooks.payment_event(attempt, client_reference="ORD-x-a1", event_id=None))
    unmatched_test = (await webhooks.notifications())[-1]["event_id"]
    cases = [
        ("evt_nope", attempt, 404, "notification.not_found"),
        ("evt_matched", attempt, 409, "notification.already_applied"),
        (unreadable, attempt, 409, "notification.not_applicable"),
        (unmatched_test, live, 409, "notification.not_applicable"),  # a test notification, a live attempt
    ]
    for event_id, target, status, code in cases:
        response = await apply(webhooks, operator, event_id, target)
        assert (response.status_code, response.json()["code"]) == (status, code), event_id
    missing = {"attempt_id": "00000000-0000-0000-0000-000000000000"}
    response = await apply(webhooks, operator, "evt_matched", missing)
    assert (response.status_code, response.json()["code"]) == (404, "attempt.not_found")
    bad = await webhooks.http.post("/v1/ops/notifications/evt_matched/apply", headers=operator, json={"attempt_id": "x"})
    assert (bad.status_code, bad.json()["code"]) == (422, "request.invalid")
    merchant = await webhooks.services.tokens.create("merchant", "m1")
    forbidden = await webhooks.http.post("/v1/ops/notifications/evt_matched/apply",
                                         headers={"Authorization": f"Bearer {merchant}"}, json=missing)
    assert forbidden.status_code == 403


async def test_two_operators_applying_at_once_apply_once(webhooks: Webhooks, operator: dict[str, str]) -> None:
    attempt = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(attempt, client_reference="ORD-dup-a1", event_id="evt_twice"))
    responses = await asyncio.gather(*(apply(webhooks, operator, "evt_twice", attempt) for _ in range(2)))
    assert sorted(r.status_code for r in responses) == [200, 409]
    assert await webhooks.transitions(attempt) == ["Succeeded"]
