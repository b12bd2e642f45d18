"""The support trail (Stripe's API reference, "Request IDs": every answer carries a ``Request-Id``
that Stripe support asks for): each Stripe answer the gateway acts on keeps its request id in the
attempt's history, for the checkout send and for a recovery lookup, through the fake's Stripe
dialect (which sends a ``Request-Id`` with every answer). CardCo sends none, and records none."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.clock import ManualClock
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import WorkerFactory
from tests.integration.recovery.test_recovery_loop import unknown_payment


async def history(shop: Shop, attempt_id: Any) -> list[tuple[str, str | None]]:
    rows = await shop.services.db.fetch_all(
        "SELECT kind, detail FROM payment_attempt_events WHERE attempt_id = %(a)s ORDER BY event_id",
        {"a": attempt_id})
    return [(r["kind"], (r["detail"] or {}).get("request_id")) for r in rows]


@pytest.mark.parametrize("provider", ["stripe"])
async def test_the_sends_answer_keeps_its_request_id_and_every_answer_is_logged_with_it(shop: Shop) -> None:
    await shop.order()
    with capture_logs() as logs:
        response = await shop.pay()
    assert response.json()["state"] == "Succeeded", response.text
    ids = [request_id for _, request_id in await history(shop, response.json()["attempt_id"]) if request_id]
    assert len(ids) == 1 and ids[0].startswith("req_")
    answered = [entry for entry in logs if entry["event"] == "provider_answered"]
    assert [(entry["operation"], entry["http_status"]) for entry in answered] == [("create", 200)]
    assert answered[0]["request_id"] == ids[0] and answered[0]["provider_account"] == shop.account


@pytest.mark.parametrize("provider", ["stripe"])
async def test_the_lookup_that_resolves_an_unknown_payment_keeps_its_request_id(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    ids = [request_id for _, request_id in await history(shop, attempt["attempt_id"]) if request_id]
    assert len(ids) == 1 and ids[0].startswith("req_")


@pytest.mark.parametrize("provider", ["cardco"])
async def test_cardco_answers_carry_no_request_id_and_none_is_recorded(shop: Shop) -> None:
    await shop.order()
    response = await shop.pay()
    assert [request_id for _, request_id in await history(shop, response.json()["attempt_id"]) if request_id] == []
