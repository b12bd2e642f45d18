"""``GET /v1/ops/notifications`` (the console's stored unmatched notifications,
applied with ``POST /v1/ops/notifications/{event_id}/apply``; seed 004, "The Notification Handler":
a notification no attempt takes is stored and waits for "an authorized reconciliation process").
On CardCo's and on Stripe's test account: the queue shows each in the common shape,
its own event type kept."""

from __future__ import annotations

from typing import Any

from gateway.services import Services
from tests.integration.notifications.conftest import Webhooks


async def queue(webhooks: Webhooks, operator: dict[str, str], **params: Any) -> list[dict[str, Any]]:
    response = await webhooks.http.get("/v1/ops/notifications", headers=operator, params=params)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()
    return items


async def test_the_queue_lists_what_no_attempt_took_until_an_operator_applies_it(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """Unmatched notifications, with the attempts that could be theirs as a hint;
    a matched one never appears; an applied one leaves ``unmatched`` for ``applied``."""
    waiting = await webhooks.set_unknown(await webhooks.attempt(amount_minor=7100))
    await webhooks.attempt(amount_minor=9900)  # another amount: never a candidate
    matched = await webhooks.attempt()
    await webhooks.deliver(webhooks.payment_event(matched, event_id="evt_matched"))
    event = webhooks.payment_event(waiting, client_reference="ORD-typo-a1", event_id="evt_lost", id="pay_lost")
    await webhooks.deliver(event)
    await webhooks.deliver(b"not json")

    lost, unreadable = await queue(webhooks, operator)
    assert {k: lost[k] for k in ("provider_event_id", "type", "object", "provider_object_id", "client_reference",
                                 "status", "amount_minor", "currency", "problem", "applicable", "applied_to",
                                 "provider_account")} == {
        "provider_event_id": "evt_lost", "type": event["type"], "object": "payment",
        "provider_object_id": "pay_lost", "client_reference": "ORD-typo-a1", "status": "succeeded",
        "amount_minor": 7100, "currency": "EUR", "problem": "unmatched", "applicable": True, "applied_to": None,
        "provider_account": webhooks.test_account}
    assert lost["candidates"] == [str(waiting["attempt_id"])]
    assert (unreadable["problem"], unreadable["applicable"], unreadable["unreadable"]) == (
        "unreadable", False, "malformed-json")
    assert await queue(webhooks, operator, limit=1) == [lost]
    assert await queue(webhooks, operator, order="desc") == [unreadable, lost]

    applied = await webhooks.http.post(f"/v1/ops/notifications/{lost['notification_event_id']}/apply",
                                       headers=operator, json={"attempt_id": str(waiting["attempt_id"])})
    assert applied.status_code == 200, applied.text
    assert await queue(webhooks, operator) == [unreadable]
    [done] = await queue(webhooks, operator, state="applied")
    assert (done["applied_to"], done["applied_by"], done["applicable"], done["candidates"]) == (
        str(waiting["attempt_id"]), "operator-ops_1", False, [])
    assert [n["notification_event_id"] for n in await queue(webhooks, operator, state="all")] == [
        lost["notification_event_id"], unreadable["notification_event_id"]]


async def test_the_queue_is_for_operators_and_validates_its_query(webhooks: Webhooks, operator: dict[str, str],
                                                                  services: Services) -> None:
    """API.md: operator endpoints need role operator; a bad query is 422 ``request.invalid``."""
    merchant = {"Authorization": f"Bearer {await services.tokens.create('merchant', 'merchant_1')}"}
    assert (await webhooks.http.get("/v1/ops/notifications", headers=merchant)).status_code == 403
    for params in ({"state": "lost"}, {"after": "1"}, {"colour": "red"}):
        response = await webhooks.http.get("/v1/ops/notifications", headers=operator, params=params)
        assert (response.status_code, response.json()["code"]) == (422, "request.invalid")
