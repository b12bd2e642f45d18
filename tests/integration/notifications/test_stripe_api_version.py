"""A Stripe event rendered in an API version the account does not pin (Stripe's API reference,
"Versioning": "Webhook events also use your account's default API version unless you set an API
version during endpoint creation"): a webhook endpoint created without the pinned version, or
upgraded since, sends objects that may mean something else. The gateway records the event with
the version it carries and escalates it, never applies it (seed 004, "The Notification Handler":
what cannot be applied is stored and escalated, never silently ignored); an operator who has
checked it applies it from the store, and the escalation resolves (docs/decisions/0070)."""

from __future__ import annotations

import pytest

from tests.integration.checkout.conftest import Shop
from tests.integration.notifications.conftest import Webhooks
from tests.integration.notifications.test_provider_deliveries import unknown_payment
from tests.stripe_support import STRIPE_API_VERSION

pytestmark = pytest.mark.parametrize("provider", ["stripe"])
ENDPOINT_VERSION = "2026-10-28.endive"  # the official ``stripe`` package's version, not the account's


@pytest.fixture
def stripe_event_version() -> str:
    return ENDPOINT_VERSION


async def test_an_event_in_another_api_version_is_recorded_and_escalated_never_applied(
        shop: Shop, webhooks: Webhooks, operator: dict[str, str]) -> None:
    attempt = await unknown_payment(shop)
    delivered = await shop.cardco.deliver_pending()
    assert [(d.state, [a.get("status") for a in d.attempts]) for d in delivered] == [("delivered", [204])]
    assert (await webhooks.reload(attempt))["state"] == "Unknown"
    [row] = await webhooks.notifications()
    assert row["attempt_id"] is None and row["detail"]["api_version"] == ENDPOINT_VERSION
    [episode] = await webhooks.escalations()
    assert episode["reason"] == "notification-api-version" and episode["resolved_at"] is None
    assert (episode["details"]["api_version"], episode["details"]["configured_api_version"]) == (
        ENDPOINT_VERSION, STRIPE_API_VERSION)
    assert episode["escalation_key"] == row["detail"]["escalation_key"]
    assert await webhooks.outbox("order-confirmation") == []

    applied = await webhooks.http.post(f"/v1/ops/notifications/{row['detail']['provider_event_id']}/apply",
                                       headers=operator, json={"attempt_id": str(attempt["attempt_id"])})
    assert applied.status_code == 200, applied.text
    assert applied.json()["resolved_escalations"] == [episode["escalation_id"]]
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
