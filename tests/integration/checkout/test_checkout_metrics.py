"""Checkout's share of the attempt metrics: "Unknown attempts by age (histogram, checkout and payouts)"
and provider calls by operation and outcome with their latency (seed 004, "The Payment Client":
every way a call ends without an answer is Unknown)."""

from __future__ import annotations

from tests.integration.checkout.conftest import Shop
from tests.integration.metrics_support import scrape

AGE = "paygate_payment_unknown_attempt_age_seconds"
CALLS = "paygate_provider_call_seconds"


async def test_a_checkout_whose_response_is_lost_ages_in_the_unknown_histogram(shop: Shop) -> None:
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    assert (await shop.pay()).json()["state"] == "Unknown"
    seen = await scrape(shop.http)
    assert seen.value(f"{AGE}_count") == 1
    assert seen.value(f"{CALLS}_count", kind="payment", account=shop.account, operation="create", outcome="timeout") == 1
    assert seen.value(f"{CALLS}_count", kind="payment", account=shop.account, operation="create", outcome="ok") == 0

    shop.services.clock.advance(1000)  # type: ignore[attr-defined]
    seen = await scrape(shop.http)
    assert (seen.value(f"{AGE}_bucket", le="900.0"), seen.value(f"{AGE}_bucket", le="1800.0")) == (0, 1)
    assert seen.value(f"{AGE}_sum") == 1000


async def test_a_paid_checkout_counts_one_answered_create_call_and_no_unknown(shop: Shop) -> None:
    await shop.order()
    assert (await shop.pay()).status_code in (200, 201, 202)
    seen = await scrape(shop.http)
    assert seen.value(f"{AGE}_count") == 0
    assert seen.value(f"{CALLS}_count", kind="payment", account=shop.account, operation="create", outcome="ok") == 1
    assert 0 < seen.value(f"{CALLS}_sum", kind="payment", account=shop.account, operation="create", outcome="ok") < 5
