"""Operator endpoints for payouts and recalls (the console's "payouts awaiting
acknowledgment or approval (with who may act), payouts and recalls in Unknown with their attempts
and history"; seed 000 policy matrix and API.md "Authentication" for who may act)."""

from __future__ import annotations

from typing import Any

from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import recall_and_payout_unknown

ABOVE_CLERK_LIMIT = 2_000_000  # clerk-22 may submit 10,000.00 EUR alone; this is 20,000.00


async def ops(world: World, path: str, **params: Any) -> Any:
    response = await world.http.get(path, headers=world.tokens["operator"], params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_payouts_awaiting_a_person_name_the_act_and_who_may_give_it(world: World) -> None:
    """Seed 000 matrix: "Destination changed in the last 7 days -> AcknowledgmentRequired" (any
    clerk of the tenant acknowledges) and "Amount above the requester's approval limit ->
    EscalationRecommended" (a clerk of the tenant, not the requester, whose limit covers it approves);
    a fresh Allowed decision takes the payout off the list."""
    await world.put("/v1/destinations/DST-NEW", {"beneficiary_id": "BEN-2208", "provider_token": "dst_tok_new"})
    await world.create("PAY-BIG", ABOVE_CLERK_LIMIT)
    world.clock.advance(1)
    response = await world.post("/v1/payouts", {
        "payout_id": "PAY-NEWDST", "beneficiary_id": "BEN-2208", "destination_id": "DST-NEW", "amount_minor": 1000,
        "currency": "EUR", "purpose": "refund of deposit", "release_at": world.clock.now().isoformat()})
    assert response.status_code == 201, response.text
    assert (await world.submit("PAY-BIG"))["outcome"] == "EscalationRecommended"
    assert (await world.submit("PAY-NEWDST"))["outcome"] == "AcknowledgmentRequired"
    await world.create("PAY-3107")  # a Draft never submitted waits for its clerk, not for another person

    big, newdst = await ops(world, "/v1/ops/payout-approvals")
    assert (big["payout_id"], big["state"], big["requester_id"], big["amount_minor"]) == (
        "PAY-BIG", "Draft", "clerk-22", ABOVE_CLERK_LIMIT)
    assert (big["decision"]["outcome"], big["decision"]["reason"]) == (
        "EscalationRecommended", "amount.above-requester-limit")
    assert (big["awaiting"]["action"], big["awaiting"]["clerks"]) == ("approve", ["approver-7"])
    assert (newdst["decision"]["outcome"], newdst["awaiting"]["action"], newdst["awaiting"]["clerks"]) == (
        "AcknowledgmentRequired", "acknowledge", ["approver-7", "clerk-22"])
    assert await ops(world, "/v1/ops/payout-approvals", limit=1) == [big]
    assert await ops(world, "/v1/ops/payout-approvals", order="desc") == [newdst, big]

    detail = await ops(world, "/v1/ops/payouts/PAY-BIG")
    assert (detail["tenant_id"], detail["awaiting"]) == ("T-0417", big["awaiting"])
    assert [event["kind"] for event in detail["history"]] == ["transition", "decision"]

    approved = await world.post("/v1/payouts/PAY-BIG/approve", who="approver")
    assert approved.json()["outcome"] == "Allowed", approved.text
    assert [p["payout_id"] for p in await ops(world, "/v1/ops/payout-approvals")] == ["PAY-NEWDST"]
    assert (await ops(world, "/v1/ops/payouts/PAY-BIG"))["awaiting"] is None


async def test_payouts_and_recalls_in_unknown_with_their_attempts_and_history(world: World) -> None:
    """Seed 000 Trace G: a payout whose response was lost is Unknown with its attempt Unknown;
    section 17: "A recall that fails or becomes Unknown is reconciled the same way". The operator
    sees both, across tenants, and the payout's history; never the destination token."""
    await recall_and_payout_unknown(world)

    [lost] = await ops(world, "/v1/ops/payouts")
    assert (lost["payout_id"], lost["state"], lost["tenant_id"]) == ("PAY-LOST", "Unknown", "T-0417")
    assert {k: lost["attempt"][k] for k in ("attempt_number", "state", "client_reference", "sends")} == {
        "attempt_number": 1, "state": "Unknown", "client_reference": "PAY-LOST-a1", "sends": 1}
    assert [p["payout_id"] for p in await ops(world, "/v1/ops/payouts", state="Paid")] == ["PAY-3107"]
    [recall] = await ops(world, "/v1/ops/recalls")
    assert (recall["payout_id"], recall["state"], recall["client_reference"], recall["tenant_id"]) == (
        "PAY-3107", "Unknown", "PAY-3107-r1", "T-0417")
    assert await ops(world, "/v1/ops/recalls", state="Succeeded") == []

    detail = await ops(world, "/v1/ops/payouts/PAY-LOST")
    assert [a["state"] for a in detail["attempts"]] == ["Unknown"]
    kinds = [event["kind"] for event in detail["history"]]
    assert kinds[:2] == ["transition", "decision"] and "provider_observation" in kinds
    assert "dst_tok" not in str(detail) and "dst_tok" not in str(await ops(world, "/v1/ops/payouts"))
    recalled = await ops(world, "/v1/ops/payouts/PAY-3107")
    assert [a["state"] for a in recalled["recalls"]["attempts"]] == ["Unknown"]
    assert "recall" in [event["kind"] for event in recalled["history"]]


async def test_payout_views_are_for_operators_only(world: World) -> None:
    """API.md: operator endpoints need role operator (403 for a clerk); 404 ``payout.not_found``."""
    for path in ("/v1/ops/payouts", "/v1/ops/payout-approvals", "/v1/ops/recalls", "/v1/ops/payouts/PAY-3107"):
        response = await world.http.get(path, headers=world.tokens["clerk"])
        assert (response.status_code, response.json()["code"]) == (403, "auth.forbidden")
    missing = await world.http.get("/v1/ops/payouts/PAY-NONE", headers=world.tokens["operator"])
    assert (missing.status_code, missing.json()["code"]) == (404, "payout.not_found")
    bad = await world.http.get("/v1/ops/recalls", headers=world.tokens["operator"], params={"state": "Lost"})
    assert (bad.status_code, bad.json()["code"]) == (422, "request.invalid")
