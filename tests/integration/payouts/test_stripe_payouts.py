"""Payouts on a Stripe account through the one attempt pipeline ("Refunds and payouts
... through Stripe's refunds and payouts APIs"; docs/decisions/0047), with Stripe's API served
through respx in the shapes its reference documents."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qsl

import pytest
import respx

from gateway.clock import ManualClock
from gateway.settings import Settings
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.payouts.conftest import AMOUNT, TOKEN, World
from tests.integration.payouts.recall_helpers import recall_job, run_recall
from tests.stripe_support import STRIPE_API_VERSION, STRIPE_URL, StripeApi, event, stripe_account
from tests.stripe_support import stripe_signature as sign

SEND_DEADLINE_S, SKEW_S = 300, 30  # settings defaults


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """Stripe first: new payouts are claimed on the first configured account (decision 0007)."""
    return settings_with(database_url, redis_url, [stripe_account(), account_config(TEST_ACCOUNT),
                                                   account_config(LIVE_ACCOUNT)])


@pytest.fixture
def stripe_api(clock: ManualClock, cardco_http: respx.MockRouter) -> Iterator[StripeApi]:
    api = StripeApi(clock.now)
    cardco_http.route(url__startswith=STRIPE_URL).mock(side_effect=api.handle)
    yield api


def creates(api: StripeApi) -> list[dict[str, str]]:
    return [dict(parse_qsl(r.content.decode())) for r in api.creates()]


async def test_a_stripe_payout_is_a_form_encoded_payout_under_the_attempts_key(
        world: World, stripe_api: StripeApi) -> None:
    assert await world.run(await world.approved()) == "Started"  # Stripe answers pending
    [sent] = stripe_api.creates()
    assert str(sent.url) == f"{STRIPE_URL}/v1/payouts"
    assert sent.headers["idempotency-key"] == "payout-PAY-3107-a1"
    assert sent.headers["stripe-version"] == STRIPE_API_VERSION
    assert creates(stripe_api) == [{"amount": str(AMOUNT), "currency": "eur", "destination": TOKEN,
                                    "metadata[client_reference]": "PAY-3107-a1"}]
    [payout] = stripe_api.payouts.values()
    payout["status"] = "paid"
    world.clock.advance(60)
    assert await world.reconcile() == 1
    state = await world.payout()
    assert (state["state"], state["attempts"][0]["provider_payout_id"]) == ("Paid", payout["id"])
    [listed] = [r for r in stripe_api.requests if r.method == "GET"]
    assert listed.url.path == "/v1/payouts" and int(listed.url.params["created[gte]"]) > 0


async def test_a_lost_answer_is_reconciled_from_stripes_list_by_reference_and_destination(
        world: World, stripe_api: StripeApi) -> None:
    stripe_api.script = ["drop"]
    assert await world.run(await world.approved()) == "Unknown"
    [payout] = stripe_api.payouts.values()
    payout["status"] = "paid"
    world.clock.advance(60)
    await world.reconcile()
    assert (await world.payout())["state"] == "Paid"
    assert len(stripe_api.creates()) == 1  # the reconciler only reads


async def test_not_found_never_closes_a_stripe_payout_as_not_applied(world: World, stripe_api: StripeApi) -> None:
    """Decision 0047 item 4: Stripe enforces no request expiry, so "not found" after the send
    deadline plus skew proves nothing; on CardCo the same lookups would record NotApplied."""
    stripe_api.script = ["lost"]
    assert await world.run(await world.approved()) == "Unknown"
    for _ in range(4):
        world.clock.advance(SEND_DEADLINE_S + SKEW_S + 600)
        await world.reconcile()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Unknown", "Unknown")
    assert stripe_api.payouts == {} and len([r for r in stripe_api.requests if r.method == "GET"]) == 4


async def test_a_signed_payout_paid_event_resolves_the_attempt(world: World, stripe_api: StripeApi) -> None:
    assert await world.run(await world.approved()) == "Started"
    [payout] = stripe_api.payouts.values()
    body = event("payout.paid", {**payout, "status": "paid"}, id="evt_payout_paid")
    response = await world.http.post("/v1/webhooks/stripe-test", content=body,
                                      headers={"Stripe-Signature": sign(body, int(world.clock.now().timestamp()))})
    assert response.status_code == 204
    assert (await world.payout())["state"] == "Paid"


async def test_a_recall_on_a_stripe_account_is_refused_with_no_call(world: World, stripe_api: StripeApi) -> None:
    """Decision 0047 item 5: Stripe cancels only pending payouts; a Paid payout is not recalled."""
    await world.put("/v1/policy/payout.recall", {"version": "payout-recall-policy/2026.11"})
    assert await world.run(await world.approved()) == "Started"
    next(iter(stripe_api.payouts.values()))["status"] = "paid"
    world.clock.advance(60)
    await world.reconcile()
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    posts = len(stripe_api.creates())
    code = await run_recall(world, await recall_job(world, decision["grant"]["grant_id"]))
    assert code == "provider.operation-unsupported"
    assert len(stripe_api.creates()) == posts
    assert await world.rows("SELECT * FROM payout_recall_attempts") == []


