"""Stripe Connect (Stripe's "Making API calls for connected accounts" and Connect webhooks): a
provider account naming a connected account (``stripe_account``) sends every call with
``Stripe-Account``, and shares the platform's Connect webhook endpoint; each event is matched to the
account configured for the connected account it names (its ``account``), and one naming a connected
account no account is configured for is recorded and escalated, never applied to the platform's
(seed 004, "The Notification Handler": what cannot be placed is escalated, never silently applied).
Through the fake's Stripe dialect, which keeps each connected account's objects apart."""

from __future__ import annotations

import httpx
import pytest

from gateway.settings import Settings
from provider_fake.app import create_app
from provider_fake.inprocess import CardCoTransport
from tests.conftest import CARDCO_URL, LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.checkout.conftest import Shop
from tests.integration.notifications.conftest import ENDPOINTS, STRIPE_KEYS, STRIPE_SECRETS, Webhooks
from tests.integration.notifications.test_provider_deliveries import unknown_payment
from tests.stripe_support import STRIPE_ACCOUNT, stripe_account

pytestmark = pytest.mark.parametrize("provider", ["stripe"])
SHOP_A = "stripe:acct_shopa:test"
CONNECTED_A = "acct_1ShopA"


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """The notification suite's accounts, plus SHOP_A: the platform's key and Connect endpoint
    (``stripe-test``, its secret), acting for connected account ``acct_1ShopA``."""
    def stripe(account: str, **extra: object) -> dict[str, object]:
        platform = extra.pop("platform", account)
        return {**stripe_account(base_url=CARDCO_URL + "/stripe", api_key=STRIPE_KEYS[str(platform)],
                                 secret=STRIPE_SECRETS[str(platform)], endpoint=ENDPOINTS[str(platform)], id=account),
                **extra}
    return settings_with(database_url, redis_url, [
        account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT),
        *(stripe(account) for account in STRIPE_SECRETS),
        stripe(SHOP_A, platform=STRIPE_ACCOUNT, stripe_account=CONNECTED_A)])


async def test_a_connected_accounts_payment_is_sent_for_it_and_its_event_resolves_it(
        shop: Shop, webhooks: Webhooks) -> None:
    shop.account = SHOP_A
    attempt = await unknown_payment(shop)
    [sent] = [r for r in shop.cardco.store.requests if r["method"] == "POST"]
    assert sent["headers"]["stripe-account"] == CONNECTED_A
    [intent] = shop.ledger()
    assert intent["account"] == f"{STRIPE_ACCOUNT}/{CONNECTED_A}"  # the fake keeps it the connected account's
    await shop.cardco.deliver_pending()
    [row] = await webhooks.notifications()
    assert (row["provider_account"], row["detail"]["connected_account"]) == (SHOP_A, CONNECTED_A)
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert await webhooks.escalations() == []


async def test_an_event_of_a_connected_account_not_configured_is_escalated_never_applied_to_the_platform(
        shop: Shop, webhooks: Webhooks, operator: dict[str, str]) -> None:
    """The platform's attempt and a connected account's PaymentIntent carrying the same reference:
    the event (``account: acct_1Unknown``) is recorded under the account that verified it and
    escalated; the platform's attempt stays Unknown, and an operator cannot apply it there either."""
    # On the platform's own account, its own event lost (it would resolve the attempt).
    attempt = await unknown_payment(shop, {"operation": "webhook", "action": "drop"})
    await shop.cardco.deliver_pending()
    assert await webhooks.notifications() == []
    async with httpx.AsyncClient(transport=CardCoTransport(create_app(shop.cardco)), base_url=CARDCO_URL,
                                 headers={"Authorization": f"Bearer {STRIPE_KEYS[STRIPE_ACCOUNT]}",
                                          "Stripe-Account": "acct_1Unknown"}) as elsewhere:
        created = await elsewhere.post("/stripe/v1/payment_intents", data={
            "amount": "4250", "currency": "eur", "payment_method": "pm_card_visa", "confirm": "true",
            "metadata[client_reference]": attempt["client_reference"]})
    assert created.status_code == 200, created.text
    await shop.cardco.deliver_pending()
    [row] = await webhooks.notifications()
    assert row["attempt_id"] is None and row["detail"]["connected_account"] == "acct_1Unknown"
    assert (await webhooks.reload(attempt))["state"] == "Unknown"
    [episode] = [e for e in await webhooks.escalations() if e["reason"] == "notification-connected-account"]
    assert episode["details"]["connected_account"] == "acct_1Unknown"
    refused = await webhooks.http.post(f"/v1/ops/notifications/{row['detail']['provider_event_id']}/apply",
                                       headers=operator, json={"attempt_id": str(attempt["attempt_id"])})
    assert refused.status_code == 409, refused.text
    assert (await webhooks.reload(attempt))["state"] == "Unknown"
