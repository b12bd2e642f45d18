"""``POST /v1/webhooks/{endpoint_id}`` at its edges (API.md "Provider notifications", "Error
codes": 401 ``webhook.signature_invalid`` / ``webhook.timestamp_out_of_tolerance`` with nothing
recorded, 413 over 256 KiB, 204 only after commit; a verified but unreadable body or unknown type
is recorded and escalated, then acknowledged).

On CardCo's account (``webhook-id``/``webhook-timestamp``/``webhook-signature``) and on a
Stripe account (``Stripe-Signature`` under its ``whsec_`` secret, Stripe Events), each with its
own scheme's malformed headers, unknown event type and payout shape."""

from __future__ import annotations

import json

from tests.integration.notifications.conftest import ENDPOINTS, Webhooks, secret_of
from tests.stripe_support import event, payout

# Each scheme's headers that cannot be verified: missing, a fractional or non-numeric timestamp.
MALFORMED: dict[str, tuple[dict[str, str], ...]] = {
    "cardco": ({}, {"webhook-id": "m", "webhook-timestamp": "1.5", "webhook-signature": "v1,AAAA"},
               {"webhook-id": "m", "webhook-timestamp": "x", "webhook-signature": "v1,%%%"}),
    "stripe": ({}, {"stripe-signature": "t=1.5,v1=AAAA"}, {"stripe-signature": "t=x,v1=%%%"})}


async def test_an_unknown_endpoint_is_a_404_problem(webhooks: Webhooks) -> None:
    response = await webhooks.deliver(webhooks.payment_event(), endpoint="nobody")
    assert response.status_code == 404
    assert response.json()["code"] == "webhook.endpoint_not_found"


async def test_a_wrong_signature_is_401_and_nothing_is_recorded(webhooks: Webhooks) -> None:
    """A live secret on the test endpoint does not verify: the endpoint's own secrets decide."""
    response = await webhooks.deliver(webhooks.payment_event(), secret=secret_of(webhooks.live_account))
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "webhook.signature_invalid"
    assert await webhooks.notifications() == [] and await webhooks.escalations() == []


async def test_a_stale_timestamp_is_401_timestamp_out_of_tolerance(webhooks: Webhooks) -> None:
    response = await webhooks.deliver(webhooks.payment_event(), skew_s=-301)
    assert response.status_code == 401
    assert response.json()["code"] == "webhook.timestamp_out_of_tolerance"
    assert await webhooks.notifications() == []


async def test_malformed_headers_are_401_never_500(webhooks: Webhooks) -> None:
    for headers in MALFORMED[webhooks.provider]:
        response = await webhooks.http.post(f"/v1/webhooks/{ENDPOINTS[webhooks.test_account]}", content=b"{}",
                                            headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["code"] == "webhook.signature_invalid"


async def test_a_body_over_256_kib_is_413_before_anything_runs(webhooks: Webhooks) -> None:
    response = await webhooks.deliver(b"{" + b" " * (256 * 1024) + b"}")
    assert response.status_code == 413
    assert await webhooks.notifications() == []


async def test_a_verified_unreadable_body_is_recorded_escalated_and_acknowledged(webhooks: Webhooks) -> None:
    """Unkeyed unreadable deliveries each get a row and join one coarse episode per account."""
    for _ in range(2):
        assert (await webhooks.deliver(b"\xff not json")).status_code == 204
    rows = await webhooks.notifications()
    assert [(r["attempt_id"], r["notification_key"]) for r in rows] == [(None, None), (None, None)]
    assert rows[0]["detail"]["unreadable"] == "malformed-json" and "body" not in rows[0]["detail"]
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"notification:{webhooks.test_account}:unreadable-unidentified"
    assert episode["details"]["notification_event_id"] == rows[0]["event_id"]
    assert len(await webhooks.outbox("operator-alert")) == 1


async def test_an_unknown_type_with_an_id_is_keyed_recorded_once_and_escalated_once(webhooks: Webhooks) -> None:
    payload = {"cardco": {"id": "evt_disputed_1", "type": "payment.disputed", "data": {"object": {"object": "payment"}}},
               "stripe": json.loads(event("charge.dispute.created", {"id": "dp_1", "object": "dispute"},
                                          id="evt_disputed_1"))}[webhooks.provider]
    for _ in range(2):
        assert (await webhooks.deliver(payload)).status_code == 204
    [row] = await webhooks.notifications()
    assert row["notification_key"] == "evt_disputed_1" and row["detail"]["unreadable"] == "unknown-type"
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"] == f"notification:{webhooks.test_account}:evt_disputed_1:unreadable"
    assert episode["details"]["provider_event_id"] == "evt_disputed_1"


async def test_a_payout_notification_no_payout_attempt_matches_is_recorded_and_escalated(webhooks: Webhooks) -> None:
    """No payout attempt has reference PO-1-a1: unmatched-payout (docs/decisions/0011)."""
    payload = {"cardco": {"id": "evt_po_1", "type": "payout.paid", "data": {"object": {
        "object": "payout", "id": "po_1", "client_reference": "PO-1-a1", "amount_minor": 100, "currency": "EUR",
        "status": "paid", "destination_token": "tok_never_stored", "sequence": 2}}},
               "stripe": json.loads(event("payout.paid", payout(id="po_1", amount=100, client_reference="PO-1-a1",
                                                                destination="tok_never_stored"), id="evt_po_1"))
               }[webhooks.provider]
    assert (await webhooks.deliver(payload)).status_code == 204
    [row] = await webhooks.notifications()
    assert "tok_never_stored" not in json.dumps(row["detail"])
    [episode] = await webhooks.escalations()
    assert (episode["escalation_key"], episode["reason"]) == (f"notification:{webhooks.test_account}:evt_po_1:unmatched",
                                                              "unmatched-payout")
