"""Operator endpoints for the outbox (API.md "Operations"; seed 004, "Downstream Work": "A dead-lettered
business row keeps blocking later rows with the same ordering key until an operator resolves it";
policy in docs/decisions/0004-outbox-dead-letters-block-until-retried-or-discarded.md)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from gateway.services import Services
from tests.integration.outbox_support import World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


@pytest.fixture
async def ops(client: httpx.AsyncClient, services: Services) -> httpx.AsyncClient:
    client.headers["Authorization"] = f"Bearer {await services.tokens.create('operator', 'op-7')}"
    return client


async def dead_confirmation_before_refund(world: World) -> tuple[uuid.UUID, int, int]:
    """An attempt whose confirmation was dead-lettered (and escalated) and whose refund waits behind it."""
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    refund = await world.effect(attempt, "refund")
    await world.fail_until_dead(f"attempt:{attempt}:order-confirmation")
    return attempt, confirmation, refund


async def open_escalations(world: World) -> list[str]:
    rows = await world.db.fetch_all("SELECT escalation_key FROM payment_escalations WHERE resolved_at IS NULL")
    return [row["escalation_key"] for row in rows]


async def test_listing_shows_what_blocks_a_row(ops: httpx.AsyncClient, world: World) -> None:
    attempt, confirmation, refund = await dead_confirmation_before_refund(world)

    dead = (await ops.get("/v1/ops/outbox", params={"state": "dead"})).json()
    assert [(m["message_id"], m["delivery_attempts"], m["last_error"]) for m in dead] == [
        (confirmation, 5, "sink answered HTTP 500")]
    assert dead[0]["dead_lettered_at"] == "2026-11-29T16:00:15Z" and dead[0]["attempt_id"] == str(attempt)
    assert "payload" not in dead[0]
    pending = (await ops.get("/v1/ops/outbox")).json()
    assert [(m["message_id"], m["blocked_by"]) for m in pending] == [(refund, confirmation)]
    dispatched = (await ops.get("/v1/ops/outbox", params={"state": "dispatched"})).json()
    assert [m["kind"] for m in dispatched] == ["operator-alert"]  # the dead-letter escalation's alert


async def test_retrying_a_dead_confirmation_delivers_it_then_its_refund(ops: httpx.AsyncClient, world: World) -> None:
    """Matrix: "a dead-lettered confirmation keeps blocking until an operator resolves it"; retry
    makes it due now with a fresh failure budget and resolves its dead-letter escalation."""
    attempt, confirmation, _refund = await dead_confirmation_before_refund(world)
    assert await open_escalations(world) == [f"outbox:{confirmation}:dead-lettered"]

    response = await ops.post(f"/v1/ops/outbox/{confirmation}/retry")
    assert response.status_code == 200
    body = response.json()
    assert (body["dead_lettered_at"], body["delivery_attempts"], body["next_attempt_at"]) == (
        None, 0, "2026-11-29T16:00:15Z")
    assert await open_escalations(world) == []

    await world.dispatch()
    assert world.receiver.keys() == [f"attempt:{attempt}:order-confirmation", f"attempt:{attempt}:refund"]


async def test_retrying_a_backing_off_row_makes_it_due_now(ops: httpx.AsyncClient, world: World) -> None:
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    world.receiver.failing[f"attempt:{attempt}:order-confirmation"] = 500
    await world.dispatch()
    del world.receiver.failing[f"attempt:{attempt}:order-confirmation"]
    assert await world.dispatch() == 0

    assert (await ops.post(f"/v1/ops/outbox/{confirmation}/retry")).status_code == 200
    assert await world.dispatch() == 1
    assert world.receiver.keys() == [f"attempt:{attempt}:order-confirmation"]


async def test_discarding_a_dead_confirmation_lets_its_refund_through(ops: httpx.AsyncClient, world: World) -> None:
    """A discarded row counts as finished: its successors proceed; it is never delivered."""
    attempt, confirmation, refund = await dead_confirmation_before_refund(world)
    response = await ops.post(f"/v1/ops/outbox/{confirmation}/discard",
                              json={"note": "confirmation sent by hand; merchant ticket 4411"})
    assert response.status_code == 200
    assert (response.json()["discarded_by"], response.json()["discard_note"], response.json()["discarded_at"]) == (
        "op-7", "confirmation sent by hand; merchant ticket 4411", "2026-11-29T16:00:15Z")
    assert await open_escalations(world) == []

    await world.dispatch()
    assert world.receiver.keys() == [f"attempt:{attempt}:refund"]
    assert (await world.message(refund))["dispatched_at"] is not None
    assert [m["message_id"] for m in (await ops.get("/v1/ops/outbox", params={"state": "discarded"})).json()] == [
        confirmation]
    assert (await ops.get("/v1/ops/outbox", params={"state": "dead"})).json() == []


async def test_illegal_transitions_are_409_and_unknown_rows_404(ops: httpx.AsyncClient, world: World) -> None:
    attempt, confirmation, refund = await dead_confirmation_before_refund(world)
    not_dead = await ops.post(f"/v1/ops/outbox/{refund}/discard", json={"note": "n"})
    assert (not_dead.status_code, not_dead.json()["code"]) == (409, "outbox.not_dead")

    await ops.post(f"/v1/ops/outbox/{confirmation}/discard", json={"note": "n"})
    for action, body in (("discard", {"note": "again"}), ("retry", None)):
        response = await ops.post(f"/v1/ops/outbox/{confirmation}/{action}", json=body)
        assert (response.status_code, response.json()["code"]) == (409, "outbox.discarded")

    await world.dispatch()
    dispatched = await ops.post(f"/v1/ops/outbox/{refund}/retry")
    assert (dispatched.status_code, dispatched.json()["code"]) == (409, "outbox.dispatched")
    for action, body in (("discard", {"note": "n"}), ("retry", None)):
        missing = await ops.post(f"/v1/ops/outbox/999999/{action}", json=body)
        assert (missing.status_code, missing.json()["code"]) == (404, "outbox.not_found")
    assert world.receiver.keys() == [f"attempt:{attempt}:refund"]


@pytest.mark.parametrize("body", [{}, {"note": ""}, {"note": None}])
async def test_a_discard_without_a_note_is_422_and_changes_nothing(ops: httpx.AsyncClient, world: World,
                                                                   body: dict[str, object]) -> None:
    _attempt, confirmation, _refund = await dead_confirmation_before_refund(world)
    response = await ops.post(f"/v1/ops/outbox/{confirmation}/discard", json=body)
    assert (response.status_code, response.json()["code"]) == (422, "request.invalid")
    assert (await world.message(confirmation))["discarded_at"] is None


async def test_only_operators_may_use_them(client: httpx.AsyncClient, services: Services) -> None:
    customer = await services.tokens.create("customer", "cus-1")
    response = await client.get("/v1/ops/outbox", headers={"Authorization": f"Bearer {customer}"})
    assert (response.status_code, response.json()["code"]) == (403, "auth.forbidden")
    bad_state = await client.get("/v1/ops/outbox", params={"state": "lost"},
                                 headers={"Authorization": f"Bearer {await services.tokens.create('operator', 'o')}"})
    assert (bad_state.status_code, bad_state.json()["code"]) == (422, "request.invalid")
