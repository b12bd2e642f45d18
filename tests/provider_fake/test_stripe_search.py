"""PaymentIntent search on the Stripe mount ("by client reference through the search
API, which lags behind writes: a search that finds nothing is never proof of absence inside the
visibility delay"), and the form and query parsing behind it.
"""

from __future__ import annotations

from typing import Any

import pytest
import stripe

from provider_fake import CardCo
from provider_fake.stripe.errors import StripeError
from provider_fake.stripe.forms import decode
from provider_fake.stripe.search import parse
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, create_intent
from tests.provider_fake.support import set_faults

pytestmark = OFFICIAL_CLIENT_WARNINGS

BY_REFERENCE = "metadata['client_reference']:'ORD-1-a1'"


async def search(client: stripe.StripeClient, query: str = BY_REFERENCE, **extra: Any) -> list[str]:
    result = await client.v1.payment_intents.search_async({"query": query, **extra})
    assert (result.object, result.url) == ("search_result", "/v1/payment_intents/search")
    return [intent.id for intent in result.data]


@pytest.fixture
def timings() -> dict[str, Any]:
    return {"visibility_delay_s": 30}


async def test_search_lags_behind_writes_while_retrieve_does_not(stripe_client, fake: CardCo) -> None:
    intent = await create_intent(stripe_client)
    assert await search(stripe_client) == []
    assert (await stripe_client.v1.payment_intents.retrieve_async(intent.id)).id == intent.id
    fake.clock.advance(29)
    assert await search(stripe_client) == []
    fake.clock.advance(1)
    assert await search(stripe_client) == [intent.id]


async def test_search_shows_an_updated_payment_intent_as_it_was_before_the_lag(
    stripe_client, fake: CardCo, control
) -> None:
    """The index lags updates too: within the delay after processing completed, search still
    shows (and matches) `processing` while retrieve already says `succeeded`."""
    await set_faults(control, {"operation": "create_payment", "action": "processing", "complete_after_s": 10})
    intent = await create_intent(stripe_client)
    fake.clock.advance(35)
    assert (await stripe_client.v1.payment_intents.retrieve_async(intent.id)).status == "succeeded"
    [shown] = (await stripe_client.v1.payment_intents.search_async({"query": BY_REFERENCE})).data
    assert shown.status == "processing"
    assert await search(stripe_client, "status:'succeeded'") == []
    fake.clock.advance(5)
    assert await search(stripe_client, "status:'succeeded'") == [intent.id]


async def test_a_create_rule_hides_the_object_from_search_for_longer(stripe_client, fake: CardCo, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "not_found_for_s", "not_found_for_s": 120})
    intent = await create_intent(stripe_client)
    fake.clock.advance(119)
    assert await search(stripe_client) == []
    fake.clock.advance(1)
    assert await search(stripe_client) == [intent.id]


async def test_a_search_rule_skips_young_objects(stripe_client, fake: CardCo, control) -> None:
    intent = await create_intent(stripe_client)
    fake.clock.advance(30)
    await set_faults(control, {"operation": "list_payments", "action": "not_found_for_s", "not_found_for_s": 60,
                               "client_reference": "ORD-1-a1", "times": 0})
    assert await search(stripe_client) == []
    assert await search(stripe_client, "metadata['client_reference']:'ORD-2-a1'") == []
    fake.clock.advance(30)
    assert await search(stripe_client) == [intent.id]


async def test_search_clauses_and_pages(stripe_client, fake: CardCo) -> None:
    small = await create_intent(stripe_client, key="k1", reference="ORD-1-a1", amount=100)
    large = await create_intent(stripe_client, key="k2", reference="ORD-2-a1", amount=5000)
    try:
        await create_intent(stripe_client, key="k3", reference="ORD-3-a1", method="pm_card_visa_chargeDeclined")
    except stripe.CardError:
        pass
    fake.clock.advance(30)
    assert await search(stripe_client, "status:'succeeded' AND amount>1000") == [large.id]
    assert await search(stripe_client, 'metadata["client_reference"]:"ORD-1-a1" OR amount>=5000') == [
        large.id, small.id]
    assert len(await search(stripe_client, "-status:'succeeded'")) == 1
    first = await stripe_client.v1.payment_intents.search_async({"query": "currency:'eur'", "limit": 2})
    second = await stripe_client.v1.payment_intents.search_async(
        {"query": "currency:'eur'", "limit": 2, "page": first.next_page})
    assert (len(first.data), first.has_more, len(second.data), second.has_more) == (2, True, 1, False)


@pytest.mark.parametrize("query", [
    "status:succeeded", "metadata['a']:'x' AND status:'y' OR amount>1", "colour:'red'", "",
])
def test_queries_outside_the_language_are_400s_on_the_query_param(query: str) -> None:
    with pytest.raises(StripeError) as refused:
        parse(query)
    assert (refused.value.http_status, refused.value.param) == (400, "query")


def test_form_bodies_decode_to_nested_hashes_and_lists() -> None:
    decoded = decode(b"amount=4250&metadata[client_reference]=ORD-1%2Da1&expand[0]=a&expand[1]=b&x[]=1&x[]=2")
    assert decoded == {"amount": "4250", "metadata": {"client_reference": "ORD-1-a1"}, "expand": ["a", "b"],
                       "x": ["1", "2"]}
    with pytest.raises(StripeError):
        decode(b"metadata]=x")
