"""Synthesized notification keys end to end (seed 004, "Notification Deduplication"): in this
module the test account's configuration says its event semantics allow one.

CardCo only: a synthesized key is for a provider whose notifications may come without
an event id; every Stripe Event carries its ``id``, the key the gateway records."""

from __future__ import annotations

import pytest

from gateway.settings import Settings, build_settings
from tests.conftest import TEST_ACCOUNT
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: see above)
from tests.integration.notifications.conftest import Webhooks, payment_event


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The test account's semantics allow a synthesized key (the live one's do not)."""
    values = settings.model_dump(mode="python")
    values["token_pepper"] = settings.token_pepper.get_secret_value()
    values["provider_accounts"] = [
        {**account, "api_key": account["api_key"].get_secret_value(),
         "webhook_secrets": [s.get_secret_value() for s in account["webhook_secrets"]],
         "synthesized_notification_keys": account["id"] == TEST_ACCOUNT}
        for account in values["provider_accounts"]]
    return build_settings(values)


async def test_an_unkeyed_notification_delivered_twice_gets_one_synthesized_key(webhooks: Webhooks) -> None:
    """Matrix: "A notification without an event ID, delivered twice, produces the same synthesized
    key from its canonical fields, despite different delivery timestamps and signatures: one event
    row, one transition, and no second outbox row"."""
    attempt = await webhooks.attempt()
    event = payment_event(attempt, event_id=None, sequence=3)
    assert (await webhooks.deliver(event)).status_code == 204
    webhooks.clock.advance(40)  # a later delivery: new timestamp, new webhook-id, new signature
    assert (await webhooks.deliver(event)).status_code == 204
    [row] = await webhooks.notifications()
    assert row["notification_key"].startswith("v1:") and row["detail"]["canonical"]["sequence"] == 3
    assert await webhooks.transitions(attempt) == ["Succeeded"]
    assert await webhooks.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_two_distinct_notifications_with_the_same_status_do_not_collide(webhooks: Webhooks) -> None:
    """Matrix: "Two distinct notifications that report the same status for the same payment do not collide"."""
    attempt = await webhooks.attempt()
    first = payment_event(attempt, type_="payment.processing", event_id=None, id="pay_1", sequence=1)
    second = payment_event(attempt, type_="payment.processing", event_id=None, id="pay_1", sequence=3)
    for event in (first, second):
        assert (await webhooks.deliver(event)).status_code == 204
    keys = [row["notification_key"] for row in await webhooks.notifications()]
    assert len(keys) == 2 and len(set(keys)) == 2


async def test_stored_canonical_fields_recompute_every_synthesized_key_for_a_backfill(webhooks: Webhooks) -> None:
    """Matrix: "A synthesized-key algorithm change is applied only after stored keys inside the
    redelivery horizon are backfilled" (docs/decisions/0010): what a backfill needs is in the store —
    every synthesized key is recomputed exactly from the canonical fields its event row keeps, with
    nothing from the delivery (webhook-id, timestamp, signature)."""
    from gateway.domain.notification_keys import CanonicalFields, synthesized_key

    attempt = await webhooks.attempt()
    for sequence, type_ in ((1, "payment.processing"), (2, "payment.succeeded")):
        assert (await webhooks.deliver(payment_event(attempt, type_=type_, event_id=None, id="pay_b",
                                                     sequence=sequence))).status_code == 204
    rows = await webhooks.notifications()
    assert len(rows) == 2
    for row in rows:
        assert row["notification_key"].startswith("v1:")
        assert synthesized_key(CanonicalFields(**row["detail"]["canonical"])) == row["notification_key"]
