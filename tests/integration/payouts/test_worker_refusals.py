"""Seed 000, "Decision and Execution Matrix", the rows where a historical Allowed decision meets
the worker's validation pipeline (section 9) and stops with zero provider calls; Traces B and C.
Each asserts its refusal code, the provider calls (0) and the payout state the matrix names."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gateway.payouts.attempts import EXECUTOR, PAYOUT
from gateway.payouts.validation import Valid, validate
from gateway.pipeline.kind import Postponed, Presenter, Refused
from tests.integration.payouts.conftest import World


async def _decision_outcomes(world: World) -> list[str]:
    return [d["outcome"] for d in (await world.payout())["decisions"]]


async def test_trace_b_a_job_delivered_after_grant_expiry_is_refused(world: World) -> None:
    """Matrix: "Job delivered after grant expiry -> refused grant.expired, 0 calls, Approved,
    awaiting fresh decision"; the sweeper then releases the unused grant's reservation."""
    job = await world.approved()
    world.clock.advance(30 * 60)
    assert await world.run(job) == "grant.expired"
    assert world.submits() == []
    assert (await world.payout())["state"] == "Approved"
    await world.sweep()
    payout = await world.payout()
    assert [g["state"] for g in payout["grants"]] == ["Expired"]
    assert await world.totals() == (0, 0)


async def test_a_grant_revoked_by_a_finance_hold_is_refused(world: World) -> None:
    """Matrix: "Grant revoked by a finance hold -> refused grant.revoked, 0 calls, Approved, on hold"."""
    job = await world.approved()
    response = await world.post(f"/v1/grants/{job.grant_id}/revoke", {"reason": "finance hold"}, who="operator")
    assert (response.status_code, response.json()["state"]) == (200, "Revoked")
    assert (await world.post(f"/v1/grants/{job.grant_id}/revoke", {"reason": "again"}, who="admin")).status_code == 409
    assert (await world.post(f"/v1/grants/{job.grant_id}/revoke", {"reason": "x"}, who="clerk")).status_code == 403
    assert await world.run(job) == "grant.revoked"
    assert world.submits() == []
    assert (await world.payout())["state"] == "Approved"
    assert await world.totals() == (0, 0)


async def test_a_consumed_grant_presented_again_under_a_new_message_is_a_duplicate(world: World) -> None:
    """Matrix: "Consumed grant presented again under a new job or message ID -> refused
    grant.consumed, recorded as duplicate, 0 additional calls, unchanged"."""
    job = await world.approved()
    await world.run(job)
    before = await world.payout()
    assert await world.run(replace(job, correlation_id="COR-resubmitted")) == "grant.consumed"
    assert len(world.submits()) == 1
    after = await world.payout()
    assert (after["state"], after["version"]) == (before["state"], before["version"])
    deliveries = [e["detail"] for e in await world.history() if e["kind"] == "delivery"]
    assert deliveries[-1]["code"] == "grant.consumed" and deliveries[-1]["duplicate_delivery"] is True


async def test_a_message_altered_to_point_at_another_payout_is_a_binding_mismatch(world: World) -> None:
    """Matrix: "Message altered to point at another payout -> refused binding.mismatch"."""
    job = await world.approved()
    await world.create("PAY-OTHER")
    assert await world.run(replace(job, payout_id="PAY-OTHER")) == "binding.mismatch"
    assert await world.run(replace(job, grant_id="00000000-0000-0000-0000-000000000000")) == "grant.unknown"
    assert await world.run(replace(job, grant_id="not-a-grant")) == "grant.unknown"
    assert world.submits() == []


async def test_a_grant_presented_by_a_different_service_is_refused(world: World) -> None:
    """Matrix: "Grant presented by a different service -> refused presenter.not-audience"; the
    worker identity is a presenter identity, not payout authority (section 8)."""
    job = await world.approved()
    reporting = Presenter("svc-reporting", frozenset({"reporting"}))
    assert await world.run(job, presenter=reporting) == "presenter.not-audience"
    assert world.submits() == []
    assert await world.run(job, presenter=EXECUTOR) == "Started"  # the grant itself is untouched


async def test_trace_c_a_payout_cancelled_after_the_decision_is_not_executable(world: World) -> None:
    """Matrix: "Payout cancelled after the decision -> refused payout.not-executable, Cancelled";
    Trace C: the decision remains Allowed."""
    job = await world.approved()
    response = await world.post("/v1/payouts/PAY-3107/cancel", {})
    assert (response.status_code, response.json()["state"]) == (200, "Cancelled")
    assert await world.totals() == (0, 0)
    assert await world.run(job) == "payout.not-executable"
    assert world.submits() == []
    assert await _decision_outcomes(world) == ["Allowed"]


async def test_a_destination_changed_after_the_decision_moves_the_payout_version(world: World) -> None:
    """Matrix: "Destination changed after the decision -> refused payout.not-executable,
    Approved, version changed"."""
    job = await world.approved()
    version = (await world.payout())["version"]
    await world.destination(token="dst_tok_changed")
    payout = await world.payout()
    assert (payout["state"], payout["version"]) == ("Approved", version + 1)
    assert await world.run(job) == "payout.not-executable"
    assert world.submits() == []


async def test_a_tenant_suspended_after_the_decision_is_refused_by_current_policy(world: World) -> None:
    """Matrix: "Tenant suspended after the decision -> refused policy.no-longer-allows, Approved"."""
    job = await world.approved()
    await world.tenant(payouts_suspended=True)
    assert await world.run(job) == "policy.no-longer-allows"
    assert world.submits() == []
    assert (await world.payout())["state"] == "Approved"
    refusal = [e["detail"] for e in await world.history() if e["kind"] == "delivery"][-1]
    assert refusal["reason"] == "tenant.payouts-suspended"


async def test_context_unavailable_at_the_worker_postpones_and_a_redelivery_revalidates(world: World) -> None:
    """Matrix: "Context unavailable at the worker -> postponed context.unavailable, not attempted,
    0 calls, Approved; revalidated on redelivery while the grant is valid"."""
    job = await world.approved()
    [saved] = await world.rows("DELETE FROM destinations RETURNING *")  # the record cannot be read
    result = await world.run(job)
    assert isinstance(result, Postponed) and result.code == "context.unavailable"
    assert world.submits() == []
    assert [g["state"] for g in (await world.payout())["grants"]] == ["Issued"]
    await world.rows("INSERT INTO destinations (destination_id, beneficiary_id, provider_token, version, changed_at)"
                     " VALUES (%(destination_id)s, %(beneficiary_id)s, %(provider_token)s, %(version)s,"
                     " %(changed_at)s) RETURNING 1", **saved)
    assert await world.run(job) == "Started"
    assert len(world.submits()) == 1


async def _suspend_beneficiary(world: World) -> None:
    await world.beneficiary(status="Suspended")


async def _change_destination(world: World) -> None:
    await world.destination(token="dst_tok_changed")


async def _change_tenant_settings(world: World) -> None:
    await world.tenant(settlement_time_zone="Europe/Lisbon")


async def _publish_policy(world: World) -> None:
    await world.put("/v1/policy/payout.submit", {"version": "payout-policy/2026.11"})


@pytest.mark.parametrize("change", [_suspend_beneficiary, _change_destination, _change_tenant_settings,
                                    _publish_policy])
async def test_a_change_between_validation_and_claim_rolls_the_claim_back(world: World, change: Any) -> None:
    """Matrix: "Beneficiary suspended between validation and claim -> valid when read, context
    fence fails, rolled back, 0 calls, Approved"; Additional tests: "a beneficiary, destination,
    tenant, or policy change committed between validation and claim rolls the claim back with
    zero provider calls" (Trace D, claim.context-changed or, for the destination, claim.lost)."""
    job = await world.approved()
    valid = await validate(PAYOUT, world.services.db, world.clock.now(), job, EXECUTOR)
    assert isinstance(valid, Valid)
    await change(world)
    # The claim this validation feeds.
    result = await PAYOUT.claim(world.services.db, world.clock.now(), world.settings, valid, EXECUTOR.service_id)
    assert isinstance(result, Refused) and result.code in ("claim.context-changed", "claim.lost")
    payout = await world.payout()
    assert (payout["state"], payout["attempts"], [g["state"] for g in payout["grants"]]) == \
        ("Approved", [], ["Issued"])
    assert world.submits() == []
