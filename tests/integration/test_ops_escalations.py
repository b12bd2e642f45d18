"""Operator endpoints for escalations (API.md "Operations" and "Escalations and reminders"; seed 004,
"Escalations" and "Reminders")."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from gateway.services import Services
from tests.integration.outbox_support import World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


@pytest.fixture
async def ops(client: httpx.AsyncClient, services: Services) -> httpx.AsyncClient:
    client.headers["Authorization"] = f"Bearer {await services.tokens.create('operator', 'op-1')}"
    return client


async def test_listing_by_state(ops: httpx.AsyncClient, world: World) -> None:
    """open = every unresolved episode, acknowledged or not; acknowledged = acknowledged unresolved."""
    attempt = await world.attempt()
    raised = await world.escalate(f"attempt:{attempt}:deadline", attempt)
    world.clock.advance(1)
    seen = await world.escalate("notification:cardco:acct_store:test:evt_2:unmatched")
    closed = await world.escalate("notification:cardco:acct_store:test:evt_3:unmatched")
    assert (await ops.post(f"/v1/ops/escalations/{seen}/acknowledge")).status_code == 200
    assert (await ops.post(f"/v1/ops/escalations/{closed}/resolve", json={"note": "duplicate"})).status_code == 200

    async def ids(state: str | None) -> list[int]:
        response = await ops.get("/v1/ops/escalations", params={"state": state} if state else None)
        assert response.status_code == 200
        return [item["escalation_id"] for item in response.json()]

    assert await ids(None) == await ids("open") == [raised, seen]
    assert await ids("acknowledged") == [seen]
    assert await ids("resolved") == [closed]
    assert await ids("all") == [raised, seen, closed]

    [item] = (await ops.get("/v1/ops/escalations", params={"state": "open", "limit": 1})).json()
    assert item == {"escalation_id": raised, "escalation_key": f"attempt:{attempt}:deadline", "reason": "deadline",
                    "attempt_id": str(attempt), "raised_at": "2026-11-29T16:00:00Z", "acknowledged_at": None,
                    "reminder_count": 0, "resolved_at": None, "details": {"attempt_id": str(attempt)}}
    next_page = (await ops.get("/v1/ops/escalations", params={"after": raised})).json()
    assert [item["escalation_id"] for item in next_page] == [seen]


async def test_acknowledge_keeps_the_episode_open_and_resets_its_schedule(ops: httpx.AsyncClient, world: World) -> None:
    episode = await world.escalate("attempt:a:deadline")
    world.clock.advance(4)
    response = await ops.post(f"/v1/ops/escalations/{episode}/acknowledge")
    assert response.status_code == 200
    assert (response.json()["acknowledged_at"], response.json()["resolved_at"]) == ("2026-11-29T16:00:04Z", None)
    world.clock.advance(3)
    again = await ops.post(f"/v1/ops/escalations/{episode}/acknowledge")
    assert again.json()["acknowledged_at"] == "2026-11-29T16:00:04Z"  # the first time a person saw it
    row = await world.db.fetch_one("SELECT next_reminder_at FROM payment_escalations")
    assert row == {"next_reminder_at": world.clock.now() + timedelta(seconds=30)}


async def test_resolve_closes_the_episode_and_never_changes_the_attempt(ops: httpx.AsyncClient, world: World) -> None:
    """API.md: "resolving an escalation alone never changes an attempt"."""
    attempt = await world.attempt()
    episode = await world.escalate(f"attempt:{attempt}:deadline", attempt)
    before = await world.db.fetch_one("SELECT * FROM payment_attempts")
    response = await ops.post(f"/v1/ops/escalations/{episode}/resolve", json={"note": "customer paid by bank transfer"})
    assert response.status_code == 200
    assert response.json()["resolved_at"] == "2026-11-29T16:00:00Z"
    assert await world.db.fetch_one("SELECT * FROM payment_attempts") == before
    row = await world.db.fetch_one("SELECT resolution_note, next_reminder_at FROM payment_escalations")
    assert row == {"resolution_note": "customer paid by bank transfer", "next_reminder_at": None}


async def test_a_resolved_escalation_that_recurs_opens_a_new_episode_whose_alert_is_delivered(
        ops: httpx.AsyncClient, world: World) -> None:
    """Matrix: "A resolved escalation that recurs opens a new episode whose alert is delivered, not
    suppressed by the first episode's outbox key"."""
    first = await world.escalate("attempt:r:deadline")
    await world.dispatch()
    assert (await ops.post(f"/v1/ops/escalations/{first}/resolve", json={"note": "handled"})).status_code == 200
    world.clock.advance(60)
    second = await world.escalate("attempt:r:deadline")
    await world.dispatch()
    assert second != first
    assert world.receiver.keys("alerts") == [f"escalation:{first}:initial", f"escalation:{second}:initial"]
    assert [m["body"]["escalation_id"] for m in world.receiver.received] == [first, second]


@pytest.mark.parametrize("action, body", [("acknowledge", None), ("resolve", {"note": "again"})])
async def test_a_resolved_episode_refuses_changes_and_unknown_ids_are_404(
        ops: httpx.AsyncClient, world: World, action: str, body: dict[str, str] | None) -> None:
    episode = await world.escalate("attempt:s:deadline")
    await ops.post(f"/v1/ops/escalations/{episode}/resolve", json={"note": "done"})
    response = await ops.post(f"/v1/ops/escalations/{episode}/{action}", json=body)
    assert (response.status_code, response.json()["code"]) == (409, "escalation.resolved")
    assert response.headers["content-type"] == "application/problem+json"
    missing = await ops.post(f"/v1/ops/escalations/{episode + 100}/{action}", json=body)
    assert (missing.status_code, missing.json()["code"]) == (404, "escalation.not_found")


@pytest.mark.parametrize("body", [{}, {"note": ""}, {"note": "   "}, {"note": 7}, {"note": "x", "extra": 1}])
async def test_a_resolve_without_a_usable_note_is_422_and_changes_nothing(
        ops: httpx.AsyncClient, world: World, body: dict[str, object]) -> None:
    episode = await world.escalate("attempt:t:deadline")
    response = await ops.post(f"/v1/ops/escalations/{episode}/resolve", json=body)
    assert (response.status_code, response.json()["code"]) == (422, "request.invalid")
    assert response.json()["errors"]
    assert await world.db.fetch_one("SELECT resolved_at FROM payment_escalations") == {"resolved_at": None}


@pytest.mark.parametrize("params", [{"state": "closed"}, {"limit": "0"}, {"limit": "x"}, {"after": "-1"},
                                    {"color": "red"}])
async def test_a_bad_query_is_422(ops: httpx.AsyncClient, params: dict[str, str]) -> None:
    response = await ops.get("/v1/ops/escalations", params=params)
    assert (response.status_code, response.json()["code"]) == (422, "request.invalid")


async def test_only_operators_may_use_them(client: httpx.AsyncClient, services: Services) -> None:
    assert (await client.get("/v1/ops/escalations")).json()["code"] == "auth.missing"
    merchant = await services.tokens.create("merchant", "m-1")
    response = await client.post("/v1/ops/escalations/1/acknowledge", headers={"Authorization": f"Bearer {merchant}"})
    assert (response.status_code, response.json()["code"]) == (403, "auth.forbidden")
