"""Seed 000, "Decision and Execution Matrix", the decision rows, and Trace A ("Non-allowed
decision: grant issued no, job published no, provider calls 0"); section 5: "Only Allowed
continues"; section 4: terms that differ from the record are rejected before policy runs."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from gateway.payouts import reference
from tests.integration.payouts.conftest import AMOUNT, TOKEN, World


async def _nothing_issued(world: World, payout_id: str = "PAY-3107") -> None:
    """Trace A: no grant, no job, no reservation, zero provider calls, payout still Draft."""
    payout = await world.payout(payout_id)
    assert payout["state"] == "Draft"
    assert payout["grants"] == []
    assert await world.rows("SELECT 1 FROM outbox_messages WHERE kind = 'payout-job' "
                            "AND payload->>'payout_id' = %(p)s", p=payout_id) == []
    assert world.submits() == []


async def _suspend_tenant(world: World) -> None:
    await world.tenant(payouts_suspended=True)


async def _unverify_beneficiary(world: World) -> None:
    await world.beneficiary(verified=False)


async def _recent_destination(world: World) -> None:
    await world.destination(token="dst_tok_new")  # changes now: "recently changed"


@pytest.mark.parametrize(("arrange", "outcome", "reason"), [
    (_suspend_tenant, "Denied", "tenant.payouts-suspended"),
    (_unverify_beneficiary, "Denied", "beneficiary.not-eligible"),
])
async def test_a_denied_submission_issues_nothing(world: World, arrange: Any, outcome: str, reason: str) -> None:
    await world.create()
    await arrange(world)
    decision = await world.submit()
    assert (decision["outcome"], decision["reason"], decision["grant"]) == (outcome, reason, None)
    await _nothing_issued(world)


async def test_a_recently_changed_destination_requires_acknowledgment_then_a_fresh_decision(world: World) -> None:
    """Matrix: "Destination recently changed -> AcknowledgmentRequired"; the acknowledgment leads
    to a fresh decision, it does not turn the pending one into Allowed (section 5)."""
    await _recent_destination(world)
    await world.create()
    decision = await world.submit()
    assert (decision["outcome"], decision["reason"]) == ("AcknowledgmentRequired", "destination.recently-changed")
    await _nothing_issued(world)
    response = await world.post("/v1/payouts/PAY-3107/acknowledge", {"reason_code": "destination.recently-changed"})
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == "Allowed"
    payout = await world.payout()
    assert [d["outcome"] for d in payout["decisions"]] == ["AcknowledgmentRequired", "Allowed"]


async def test_an_amount_above_the_requester_limit_recommends_escalation_and_an_approver_decides(
        world: World) -> None:
    """Matrix: "Amount above requester's limit -> EscalationRecommended"; API.md: approve by a
    clerk of the tenant, not the requester, whose limit covers the amount."""
    await world.create(amount_minor=1_500_000)
    decision = await world.submit()
    assert (decision["outcome"], decision["reason"]) == ("EscalationRecommended", "amount.above-requester-limit")
    await _nothing_issued(world)
    assert (await world.post("/v1/payouts/PAY-3107/approve", {}, who="clerk")).status_code == 403
    approved = await world.post("/v1/payouts/PAY-3107/approve", {}, who="approver")
    assert approved.status_code == 200, approved.text
    assert (approved.json()["outcome"], approved.json()["grant"]["attempt_number"]) == ("Allowed", 1)


async def test_unavailable_context_defers(world: World) -> None:
    """Matrix: "Context unavailable -> Deferred (context.unavailable)": here the tenant record of
    the clerk's tenant does not exist."""
    token = await world.services.tokens.create("clerk", "clerk-9", tenant_id="T-0000", approval_limit_minor=10**9)
    world.tokens["nowhere"] = {"Authorization": f"Bearer {token}"}
    await world.create(clerk="nowhere")
    response = await world.post("/v1/payouts/PAY-3107/submit", {
        "beneficiary_id": "BEN-2208", "destination_id": "DST-77", "amount_minor": AMOUNT, "currency": "EUR"},
        who="nowhere")
    assert (response.json()["outcome"], response.json()["reason"]) == ("Deferred", "context.unavailable")
    assert world.submits() == []


async def test_a_second_payout_over_the_daily_limit_is_denied_once_the_first_is_reserved(world: World) -> None:
    """Matrix: "Second payout would exceed the daily limit once the first one's reservation is
    counted -> Denied (tenant.daily-limit)"."""
    await world.create("PAY-1", amount_minor=900_000)
    await world.create("PAY-2", amount_minor=900_000)
    await world.tenant(daily_limit_minor=1_500_000)
    assert (await world.submit("PAY-1"))["outcome"] == "Allowed"
    second = await world.submit("PAY-2")
    assert (second["outcome"], second["reason"]) == ("Denied", "tenant.daily-limit")
    await _nothing_issued(world, "PAY-2")


async def test_two_concurrent_submissions_cannot_together_exceed_the_daily_limit(world: World) -> None:
    """Additional test: "two payouts evaluated concurrently cannot together exceed the tenant's
    daily limit" -- real concurrency: two requests, two connections, one reservation row."""
    await world.tenant(daily_limit_minor=1_500_000)
    for index in range(1, 5):
        await world.create(f"PAY-{index}", amount_minor=900_000)
    decisions = await asyncio.gather(*(world.submit(f"PAY-{index}") for index in range(1, 5)))
    outcomes = sorted((d["outcome"], d["reason"]) for d in decisions)
    assert outcomes == [("Allowed", "payout.allowed")] + [("Denied", "tenant.daily-limit")] * 3
    assert await world.totals() == (0, 900_000)


async def test_terms_that_differ_from_the_record_are_refused_without_a_decision(world: World) -> None:
    """Section 4: "If the request's beneficiary, destination, amount, or currency differs from
    the payout record, the request is rejected before policy runs"."""
    await world.create()
    response = await world.post("/v1/payouts/PAY-3107/submit", {
        "beneficiary_id": "BEN-2208", "destination_id": "DST-77", "amount_minor": AMOUNT + 1, "currency": "EUR"})
    assert (response.status_code, response.json()["code"]) == (409, "payout.terms_mismatch")
    assert (await world.payout())["decisions"] == []


async def test_another_tenants_payout_is_not_found_and_roles_are_enforced(world: World) -> None:
    await world.create()
    other = await world.http.get("/v1/payouts/PAY-3107", headers=world.tokens["other_tenant"])
    assert (other.status_code, other.json()["code"]) == (404, "payout.not_found")
    as_operator = await world.http.get("/v1/payouts/PAY-3107", headers=world.tokens["operator"])
    assert (as_operator.status_code, as_operator.json()["code"]) == (403, "auth.forbidden")
    bad = await world.post("/v1/payouts", {"payout_id": "PAY-9"})
    assert (bad.status_code, bad.json()["code"]) == (422, "request.invalid")


async def test_reference_versions_move_only_when_a_policy_relevant_field_changes(world: World) -> None:
    first = await world.tenant()
    assert (await world.tenant())["version"] == first["version"]
    assert (await world.tenant(daily_limit_minor=1))["version"] == first["version"] + 1
    destination = await world.destination()
    assert "provider_token" not in destination
    assert (await world.destination())["version"] == destination["version"]
    changed = await world.destination(token="dst_tok_other")
    assert changed["version"] == destination["version"] + 1


async def test_the_destination_registered_eight_days_ago_is_not_recently_changed(world: World) -> None:
    """API.md: "A destination registered or changed less than 7 days ago counts as recently changed"."""
    await reference.upsert_destination(world.services.db, world.clock.now() - timedelta(days=6, hours=23),
                                       "DST-78", beneficiary_id="BEN-2208", provider_token=TOKEN, actor="test")
    await world.create()
    assert (await world.submit())["outcome"] == "Allowed"
