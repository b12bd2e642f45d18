"""Operator endpoints for payment attempts (API.md "Operations": ``GET /v1/ops/attempts?state=Unknown``
oldest first, and ``GET /v1/ops/attempts/{attempt_id}``, "the attempt row plus its full event
history, oldest first; never a secret or card data"; "Precise details" → Shapes).

On CardCo's account alone: these endpoints read rows no adapter shapes; the provider matrix of the
notifications behind them is tests/integration/notifications."""

from __future__ import annotations

import uuid

import httpx
import pytest

from gateway.services import Services
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: see above)
from tests.integration.notifications.conftest import (
    Webhooks,
    operator,
    payment_event,
    webhooks,
)

__all__ = ["operator", "shop", "webhooks"]


async def test_lists_attempts_in_one_state_oldest_first_with_keyset_paging(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """API.md: ``?state=Unknown`` oldest first; ``limit`` and ``after`` (the last attempt id) page it."""
    first = await webhooks.set_unknown(await webhooks.attempt())
    webhooks.clock.advance(5)
    started = await webhooks.attempt()
    webhooks.clock.advance(5)
    second = await webhooks.set_unknown(await webhooks.attempt())

    async def ids(**params: str | int) -> list[str]:
        response = await webhooks.http.get("/v1/ops/attempts", headers=operator, params=params)
        assert response.status_code == 200, response.text
        return [item["attempt_id"] for item in response.json()]

    unknown = [str(first["attempt_id"]), str(second["attempt_id"])]
    assert await ids(state="Unknown") == await ids() == unknown
    assert await ids(state="Started") == [str(started["attempt_id"])]
    assert await ids(state="Succeeded") == []
    assert await ids(state="Unknown", limit=1) == unknown[:1]
    assert await ids(state="Unknown", after=unknown[0]) == unknown[1:]
    assert await ids(state="Unknown", after=unknown[1]) == []
    assert await ids(state="Unknown", after=str(uuid.uuid4())) == []


async def test_all_lists_attempts_in_every_state_newest_first_with_keyset_paging(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """The console's attempts view opens on "all recent" (``state=all``), so a payment
    that just succeeded is there; the default stays ``Unknown`` (API.md)."""
    unknown = await webhooks.set_unknown(await webhooks.attempt())
    webhooks.clock.advance(5)
    started = await webhooks.attempt()

    async def ids(**params: str | int) -> list[str]:
        response = await webhooks.http.get("/v1/ops/attempts", headers=operator, params=params)
        assert response.status_code == 200, response.text
        return [item["attempt_id"] for item in response.json()]

    both = [str(unknown["attempt_id"]), str(started["attempt_id"])]
    assert await ids(state="all") == both
    assert await ids(state="all", order="desc") == both[::-1]
    assert await ids(state="all", limit=1, order="desc") == both[1:]
    assert await ids(state="all", after=both[0]) == both[1:]
    assert await ids() == both[:1]


@pytest.mark.parametrize("params", [{"state": "unknown"}, {"state": "Lost"}, {"after": "not-a-uuid"},
                                    {"limit": "0"}, {"limit": "1001"}, {"colour": "red"}])
async def test_an_invalid_query_is_request_invalid(webhooks: Webhooks, operator: dict[str, str],
                                                   params: dict[str, str]) -> None:
    """API.md Conventions: schema errors are 422 ``request.invalid`` with the field errors (the
    paging parameters too: tests/integration/test_paging.py)."""
    response = await webhooks.http.get("/v1/ops/attempts", headers=operator, params=params)
    assert (response.status_code, response.json()["code"]) == (422, "request.invalid")
    assert response.json()["errors"]


async def test_only_operators_read_attempts(webhooks: Webhooks, services: Services) -> None:
    """API.md: "All operator endpoints need role operator"; 401 without a token, 403 for another role."""
    attempt = await webhooks.attempt()
    merchant = {"Authorization": f"Bearer {await services.tokens.create('merchant', 'merchant_1')}"}
    for path in ("/v1/ops/attempts", f"/v1/ops/attempts/{attempt['attempt_id']}"):
        assert (await webhooks.http.get(path)).json()["code"] == "auth.missing"
        denied = await webhooks.http.get(path, headers=merchant)
        assert (denied.status_code, denied.json()["code"]) == (403, "auth.forbidden")


async def test_an_attempt_with_its_history_oldest_first_and_nothing_secret(
        shop: Shop, operator: dict[str, str]) -> None:
    """API.md Shapes: ``{"attempt": {...}, "events": [{"event_id", "kind", "occurred_at", "actor",
    "detail"}]}``; DESIGN invariant 8: no payment-method token, request body or lease token."""
    await shop.order()
    paid = (await shop.pay()).json()
    response = await shop.http.get(f"/v1/ops/attempts/{paid['attempt_id']}", headers=operator)
    assert response.status_code == 200, response.text
    body = response.json()
    attempt = body["attempt"]
    assert {k: attempt[k] for k in ("attempt_id", "order_id", "attempt_number", "client_reference", "state",
                                    "provider_payment_id", "amount_minor", "currency")} == {
        "attempt_id": paid["attempt_id"], "order_id": "ORD-5521", "attempt_number": 1,
        "client_reference": "ORD-5521-a1", "state": "Succeeded", "provider_payment_id": paid["provider_payment_id"],
        "amount_minor": 4250, "currency": "EUR"}
    [row] = await shop.attempts()
    assert attempt["idempotency_key"] == row["idempotency_key"]
    assert attempt["first_sent_at"] == attempt["created_at"] == "2026-11-29T16:00:00Z"
    assert attempt["escalation_deadline"] is not None and attempt["recovery_owner"] is None
    assert [event["kind"] for event in body["events"]] == await shop.events(row["attempt_id"]) == [
        "send_intent", "send_result", "transition"]
    assert set(body["events"][0]) >= {"event_id", "kind", "occurred_at", "actor", "detail"}
    assert body["events"][2]["detail"] == {"from": "Started", "to": "Succeeded", "reason": None}
    assert "request_body" not in attempt and "lease_token" not in attempt
    assert "pm_card_visa" not in response.text and "payment_method" not in response.text


async def test_a_notification_applied_later_is_part_of_the_attempts_history(
        webhooks: Webhooks, operator: dict[str, str]) -> None:
    """A notification stored unmatched keeps attempt_id NULL (history is append-only); once an
    operator applies it, it belongs to the attempt's full history, in time order."""
    attempt = await webhooks.attempt()
    webhooks.clock.advance(2)
    await webhooks.deliver(payment_event(attempt, client_reference="ORD-typo-a1", event_id="evt_late_1"))
    webhooks.clock.advance(2)
    applied = await webhooks.http.post("/v1/ops/notifications/evt_late_1/apply", headers=operator,
                                       json={"attempt_id": str(attempt["attempt_id"])})
    assert applied.status_code == 200, applied.text
    body = (await webhooks.http.get(f"/v1/ops/attempts/{attempt['attempt_id']}", headers=operator)).json()
    assert [(e["kind"], e["occurred_at"]) for e in body["events"]] == [
        ("send_intent", "2026-11-29T16:00:00Z"), ("notification", "2026-11-29T16:00:02Z"),
        ("transition", "2026-11-29T16:00:04Z")]
    assert body["events"][1]["notification_key"] == "evt_late_1"
    assert body["attempt"]["state"] == "Succeeded"


@pytest.mark.parametrize("attempt_id", [str(uuid.uuid4()), "not-a-uuid"], ids=["unknown-uuid", "not-a-uuid"])
async def test_an_unknown_attempt_is_not_found(client: httpx.AsyncClient, operator: dict[str, str],
                                               attempt_id: str) -> None:
    response = await client.get(f"/v1/ops/attempts/{attempt_id}", headers=operator)
    assert (response.status_code, response.json()["code"]) == (404, "attempt.not_found")
