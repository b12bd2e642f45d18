"""Seed 000, "Reconcile Before Any New Attempt" and the review's "Reconciliation and retry" 3: the
lookup that records NotApplied must begin after the request expiry, the skew AND the provider's
visibility delay. CardCo's lists lag behind writes by its configured visibility
delay (API.md); here it is longer than send deadline + skew + processing allowance, the cutoff the
gateway used when it had no setting for the lag. What CardCo holds is read from its own ledger."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.clock import ManualClock
from gateway.settings import Settings
from provider_fake import CardCo, CardCoConfig
from provider_fake import Clock as CardCoClock
from provider_fake.config import Account
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.payouts.conftest import AMOUNT, World

SEND_DEADLINE_S, SKEW_S, ALLOWANCE_S = 300, 30, 10  # settings defaults
OLD_CUTOFF_S = SEND_DEADLINE_S + SKEW_S + ALLOWANCE_S
LAG_S = 400  # CardCo's listing lag, longer than the old cutoff after the claim


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """CardCo's accounts, each stating CardCo's listing lag."""
    return settings_with(database_url, redis_url, [account_config(TEST_ACCOUNT, visibility_delay_s=LAG_S),
                                                   account_config(LIVE_ACCOUNT, visibility_delay_s=LAG_S)])


@pytest.fixture
def cardco(clock: ManualClock) -> CardCo:
    """The CardCo fake, its lists lagging ``LAG_S`` behind its writes."""
    accounts = [Account(id=str(a["id"]), api_key=str(a["api_key"]), webhook_secrets=list(a["webhook_secrets"]))  # type: ignore[call-overload]
                for a in (account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT))]
    return CardCo(CardCoConfig(accounts=accounts, visibility_delay_s=LAG_S), clock=CardCoClock(base=clock.now))


async def test_a_lost_payout_hidden_by_the_listing_lag_is_not_closed_and_is_paid_once(world: World) -> None:
    """The payout's answer is lost after CardCo paid it. Past the old cutoff (send deadline + skew +
    allowance) CardCo's list still hides it: the attempt stays Unknown and no second payout can be
    authorized. Once the lag has passed, the lookup finds it: Paid, one payout at CardCo."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    claimed_at = world.clock.now()
    assert await world.run(job) == "Unknown"

    world.clock.set(claimed_at + timedelta(seconds=OLD_CUTOFF_S + 1))
    assert await world.reconcile() == 1
    assert await _records_seen(world) == [0]  # one lookup, and CardCo's list hid the payout
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Unknown", "Unknown")
    refused = await world.post("/v1/payouts/PAY-3107/reauthorize", {})
    assert (refused.status_code, refused.json()["code"]) == (409, "payout.attempt_unresolved")

    world.clock.set(claimed_at + timedelta(seconds=LAG_S + 900))  # the lag, and the next lookup step
    assert await world.reconcile() == 1
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert [(entry["client_reference"], entry["amount_minor"]) for entry in world.ledger()] == [("PAY-3107-a1", AMOUNT)]
    assert len(world.submits()) == 1
    assert await _records_seen(world) == [0, 1]
    assert await world.totals() == (AMOUNT, 0)


async def _records_seen(world: World) -> list[int]:
    """How many records each of the reconciler's lookups found (its history events)."""
    return [event["detail"]["records"] for event in await world.history() if event["kind"] == "reconciliation"]
