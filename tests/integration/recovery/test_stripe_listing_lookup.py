"""Lookups where Stripe's Search is unavailable (Search needs a recent API version and is not
offered in every country): a Stripe account whose ``payment_lookup`` is ``list`` looks a payment up
by its reference through ``GET /v1/payment_intents?created[gte]=`` (from the attempt's creation,
minus the hosts' skew) and the metadata reference, as payouts are, through the fake's Stripe
dialect; the Search API is never called."""

from __future__ import annotations

import pytest

from gateway.clock import ManualClock
from gateway.settings import Settings
from tests.conftest import CARDCO_URL, LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import STRIPE_KEY, STRIPE_SECRET, WorkerFactory
from tests.integration.recovery.test_recovery_loop import row, unknown_payment
from tests.stripe_support import stripe_account

pytestmark = pytest.mark.parametrize("provider", ["stripe"])


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """The recovery suite's accounts, the Stripe one looking payments up by listing them."""
    return settings_with(database_url, redis_url, [
        account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT),
        {**stripe_account(base_url=CARDCO_URL + "/stripe", api_key=STRIPE_KEY, secret=STRIPE_SECRET),
         "payment_lookup": "list"}])


async def test_a_lost_answer_is_found_by_listing_payment_intents_and_matching_the_reference(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    await shop.order("ORD-OTHER")
    assert (await shop.pay("ORD-OTHER")).json()["state"] == "Succeeded"  # another intent on the same page
    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    resolved = await row(shop, attempt["attempt_id"])
    assert resolved["state"] == "Succeeded" and len([p for p in shop.ledger() if p["status"] == "succeeded"]) == 2
    since = int(resolved["created_at"].timestamp()) - 300
    assert [r["path"] for r in shop.cardco.store.requests if r["method"] == "GET"] == [
        f"/stripe/v1/payment_intents?created%5Bgte%5D={since}&limit=100"]  # never /search
