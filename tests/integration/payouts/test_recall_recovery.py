"""Payout recall recovery (docs/decisions/0015, choice 6). Seed 000 section 17: "A recall that
fails or becomes Unknown is reconciled the same way"; so the payout rows of the "Decision and
Execution Matrix" apply to a recall attempt: "Claim commits but its acknowledgment is lost ->
worker does not send, 0 calls, Claimed, then NotStarted after the sweeper fences"; "Provider
rate-limits, documented no-effect -> 1 call per send, bounded"; "Reconciliation finds a record
whose amount or destination does not match the attempt -> Unknown, escalated"; "Reconciliation
proves not applied, under all three conditions -> NotApplied"; "Reconciliation cannot tell -> 0
additional calls, Unknown, escalated". Calls are counted from CardCo's own request log."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from gateway.domain.outcomes import AttemptState
from gateway.payouts.recalls import RECALL, RECALL_EXECUTOR
from gateway.pipeline import transitions
from gateway.pipeline.executor import Executor
from gateway.pipeline.sweeper import sweep_leases
from tests.integration.metrics_support import scrape
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import (
    original,
    paid,
    recall_calls,
    recall_job,
    recall_lookups,
    reconcile_recalls,
    run_recall,
)
from tests.integration.payouts.test_execution_outcomes import LosesCommitAcknowledgment

SEND_DEADLINE_S, SKEW_S, VISIBILITY_S = 300, 30, 10  # settings defaults; the account's processing allowance


async def _recall(world: World) -> Any:
    response = await world.post("/v1/payouts/PAY-3107/recall")
    assert response.status_code == 200, response.text
    decision = response.json()
    assert decision["outcome"] == "Allowed", decision
    return await recall_job(world, decision["grant"]["grant_id"])


async def _attempt(world: World) -> dict[str, Any]:
    [row] = await world.rows("SELECT * FROM payout_recall_attempts WHERE payout_id = 'PAY-3107' "
                             "ORDER BY recall_number DESC LIMIT 1")
    return row


async def _escalations(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason, details FROM payment_escalations "
                            "WHERE resolved_at IS NULL ORDER BY escalation_id")


async def test_a_lost_claim_acknowledgment_sends_no_recall_and_is_swept_to_not_started(world: World) -> None:
    """Matrix: "Claim commits but its acknowledgment is lost -> worker does not send, 0 calls,
    Claimed, then NotStarted after the sweeper fences"; the recall may then be asked for again."""
    before = await paid(world)
    job = await _recall(world)
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=2)  # validation, then the claim
    assert await Executor(RECALL, lossy, world.clock, world.settings, RECALL_EXECUTOR, world.services.http).run(job) == "claim.unconfirmed"
    assert recall_calls(world) == []
    assert (await _attempt(world))["state"] == "Claimed"
    assert await run_recall(world, job) == "grant.consumed"  # the redelivery finds the durable claim
    assert await sweep_leases(RECALL, world.services.db, world.clock) == 0  # the lease has not lapsed yet
    world.clock.advance(400)
    assert await sweep_leases(RECALL, world.services.db, world.clock) == 1
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["outcome_reason"], attempt["lease_epoch"]) == ("NotStarted", "lease.lapsed", 2)
    assert recall_calls(world) == []
    again = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert (again["outcome"], again["grant"]["recall_number"]) == ("Allowed", 2)  # fresh authority, new N
    assert original(await world.payout()) == original(before)


async def test_an_unconfirmed_started_write_sends_nothing_and_the_sweeper_records_unknown(world: World) -> None:
    """Additional: "a worker whose Started write is refused or unconfirmed does not send"; the
    sweeper finds it Started (it may have committed) and records Unknown, never NotStarted; a
    fenced worker can neither start nor record."""
    await paid(world)
    job = await _recall(world)
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=3)  # validation, claim, Started
    assert await Executor(RECALL, lossy, world.clock, world.settings, RECALL_EXECUTOR, world.services.http).run(job) == "start.unconfirmed"
    stale = await _attempt(world)
    assert stale["state"] == "Started"
    world.clock.advance(400)
    assert await sweep_leases(RECALL, world.services.db, world.clock) == 1
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["outcome_reason"]) == ("Unknown", "lease.lapsed")
    assert not await transitions.count_send(RECALL, world.services.db, world.clock.now(), stale, stale["lease_epoch"])
    async with world.services.db.transaction() as conn:
        assert await transitions.resolve(RECALL, conn, world.clock.now(), stale, AttemptState.FAILED, "late",
                                         actor="old-worker", from_states=[AttemptState.UNKNOWN],
                                         epoch=stale["lease_epoch"]) is None
    assert recall_calls(world) == []
    refused = await world.post("/v1/payouts/PAY-3107/recall")
    assert (refused.status_code, refused.json()["code"]) == (409, "payout.attempt_unresolved")


async def test_a_rate_limited_recall_is_resent_with_the_same_key_and_bytes(world: World) -> None:
    """Matrix: "Provider rate-limits, documented no-effect -> 1 call per send, bounded"; section 14:
    an execution retry inside the attempt, same key and parameters, before the send deadline."""
    await paid(world)
    await world.faults({"operation": "create_recall", "action": "rate_limit", "retry_after_s": 0})
    assert await run_recall(world, await _recall(world)) == "Started"
    first, second = recall_calls(world)
    assert first["body_base64"] == second["body_base64"]
    assert first["headers"]["idempotency-key"] == second["headers"]["idempotency-key"] == "recall-PAY-3107-r1"
    assert (await _attempt(world))["sends"] == 2


async def test_rate_limiting_that_never_ends_is_bounded_and_left_to_the_reconciler(world: World) -> None:
    await paid(world)
    await world.faults({"operation": "create_recall", "action": "rate_limit", "retry_after_s": 0, "times": 0})
    assert await run_recall(world, await _recall(world)) == "provider.rate-limited"
    assert len(recall_calls(world)) == 3
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["sends"]) == ("Started", 3)
    world.clock.advance(60)
    assert await reconcile_recalls(world) == 0  # still leased: the sweeper fences it first
    world.clock.advance(400)
    assert await sweep_leases(RECALL, world.services.db, world.clock) == 1
    assert await reconcile_recalls(world) == 1
    attempt = await _attempt(world)  # not found, past expiry + skew + visibility: no send took effect
    assert (attempt["state"], attempt["outcome_reason"]) == ("NotApplied", "reconciled.not-found")
    assert len(recall_calls(world)) == 3  # the reconciler never resends


async def test_not_found_becomes_not_applied_only_after_expiry_skew_and_visibility(world: World) -> None:
    """Matrix: "Reconciliation proves not applied, under all three conditions -> NotApplied";
    Additional: "reconciliation never records NotApplied before the attempt's request expiry plus
    skew"; the next recall is a materially new attempt (section 16): new decision, grant, N and key."""
    before = await paid(world)
    await world.faults({"operation": "create_recall", "action": "timeout_before_effect"})
    assert await run_recall(world, await _recall(world)) == "Unknown"
    world.clock.advance(SEND_DEADLINE_S + SKEW_S)  # expiry + skew, but not the visibility delay
    await reconcile_recalls(world)
    assert (await _attempt(world))["state"] == "Unknown"
    world.clock.advance(VISIBILITY_S + 120)
    await reconcile_recalls(world)
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["outcome_reason"]) == ("NotApplied", "reconciled.not-found")
    assert len(recall_calls(world)) == 1
    assert await run_recall(world, await _recall(world)) == "Started"
    assert [c["headers"]["idempotency-key"] for c in recall_calls(world)] == ["recall-PAY-3107-r1",
                                                                             "recall-PAY-3107-r2"]
    assert [a["state"] for a in (await world.payout())["recalls"]["attempts"]] == ["NotApplied", "Started"]
    assert original(await world.payout()) == original(before)


async def test_a_recall_record_for_another_payout_escalates_a_mismatch_and_stays_unknown(world: World) -> None:
    """Matrix: "Reconciliation finds a record whose amount or destination does not match the
    attempt -> Unknown, escalated"; section 13: verify before trusting a found record. A recall
    under this attempt's reference names another CardCo payout."""
    await paid(world)
    await world.faults({"operation": "create_recall", "action": "timeout_before_effect"})
    assert await run_recall(world, await _recall(world)) == "Unknown"
    headers = {"Authorization": "Bearer ck_test_key", "CardCo-Account": "cardco:acct_store:test"}
    expires_at = (world.clock.now() + timedelta(hours=1)).isoformat()
    async with httpx.AsyncClient(base_url="http://cardco.test", headers=headers) as rogue:
        stranger = (await rogue.post("/v1/payouts", headers={"Idempotency-Key": "stranger"}, json={
            "amount_minor": 1, "currency": "EUR", "destination_token": "x", "client_reference": "STRANGER-a1",
            "expires_at": expires_at})).json()
        world.clock.advance(5)
        world.cardco.settle()
        response = await rogue.post(f"/v1/payouts/{stranger['id']}/recalls", headers={"Idempotency-Key": "rogue"},
                                    json={"client_reference": "PAY-3107-r1", "expires_at": expires_at})
        assert response.status_code == 200, response.text
    world.clock.advance(60)
    await reconcile_recalls(world)
    attempt = await _attempt(world)
    assert attempt["state"] == "Unknown"
    [escalation] = await _escalations(world)
    assert escalation["reason"] == "payout-recall-mismatch"
    assert escalation["escalation_key"] == f"payout-recall-attempt:{attempt['attempt_id']}:mismatch"
    assert escalation["details"]["client_reference"] == "PAY-3107-r1"


async def test_a_recall_reconciliation_that_cannot_tell_escalates_and_its_resolution_closes_it(
        world: World) -> None:
    """Matrix: "Reconciliation cannot tell -> 0 additional calls, Unknown, escalated"; seed 004
    "Escalations": the resolving transaction closes the attempt's escalations. /metrics: a
    recall is the payout pipeline's kind ``payout_recall`` in every paygate_payout_* family."""
    await paid(world)
    await world.faults({"operation": "create_recall", "action": "drop_response"},
                       {"operation": "list_recalls", "action": "error_500_before_effect", "times": 0})
    assert await run_recall(world, await _recall(world)) == "Unknown"
    for _ in range(8):
        world.clock.advance(900)
        await reconcile_recalls(world)
    attempt = await _attempt(world)
    assert attempt["state"] == "Unknown"
    [escalation] = await _escalations(world)
    assert (escalation["reason"], escalation["escalation_key"]) == (
        "payout-recall-deadline", f"payout-recall-attempt:{attempt['attempt_id']}:deadline")
    assert len(recall_calls(world)) == 1
    seen = await scrape(world.http)
    recall = {"kind": "payout_recall"}
    assert seen.value("paygate_payout_unknown_attempt_age_seconds_count", **recall) == 1
    assert seen.value("paygate_payout_unknown_attempt_age_seconds_count", kind="payout") == 0
    assert seen.value("paygate_payout_escalations_open", reason="payout-recall-deadline", **recall) == 1
    assert seen.value("paygate_payout_reconciliations_total", outcome="lookup_failed", **recall) == 8
    assert seen.total("paygate_provider_call_seconds_count", operation="create", outcome="timeout",
                      **recall) == 1
    assert seen.total("paygate_payout_decisions_total", outcome="Allowed", **recall) == 1
    await world.faults()  # the lookup answers again
    world.clock.advance(3600)
    await reconcile_recalls(world)
    assert (await _attempt(world))["state"] == "Succeeded"
    assert await _escalations(world) == []
    assert len(recall_calls(world)) == 1
    assert len(recall_lookups(world)) >= 2
    seen = await scrape(world.http)
    assert seen.value("paygate_payout_reconciliations_total", outcome="succeeded", **recall) == 1
    assert seen.value("paygate_payout_unknown_attempt_age_seconds_count", **recall) == 0
    assert seen.series("paygate_payout_escalations_open") == []
