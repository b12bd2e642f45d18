"""Payout recall, the gateway side (docs/decisions/0015). Seed 000 section 17, "Compensation and
Reversal Are Separate Operations": a recall is "a separate consequential operation ... with its
own request, its own decision, its own authority, and its own attempts and outcomes"; "A recall
that fails or becomes Unknown is reconciled the same way"; "The original payout's records stay as
they are. The recall links to them." Section 16: a materially new attempt needs "A new decision",
"New authority", "An attempt number allocated atomically" and a key derived from it."""

from __future__ import annotations

import base64
import json

from tests.integration.payouts.conftest import AMOUNT, World
from tests.integration.payouts.recall_helpers import (
    RECALL_POLICY,
    original,
    paid,
    recall_calls,
    recall_job,
    recall_lookups,
    reconcile_recalls,
    run_recall,
)

SEND_DEADLINE_S = 300  # settings default: the recall's expires_at


async def test_a_paid_payout_is_recalled_through_its_own_decision_grant_and_attempt(world: World) -> None:
    before = await paid(world)
    response = await world.post("/v1/payouts/PAY-3107/recall")
    assert response.status_code == 200, response.text
    decision = response.json()
    assert (decision["operation"], decision["outcome"], decision["reason"], decision["policy_version"]) == \
        ("payout.recall", "Allowed", "recall.allowed", RECALL_POLICY)
    assert decision["grant"]["recall_number"] == 1
    job = await recall_job(world, decision["grant"]["grant_id"])
    assert await run_recall(world, job) == "Started"  # CardCo accepted the recall: processing
    [call] = recall_calls(world)
    body = json.loads(base64.b64decode(call["body_base64"]))
    provider_payout_id = before["attempts"][0]["provider_payout_id"]
    assert call["path"] == f"/v1/payouts/{provider_payout_id}/recalls"
    assert call["headers"]["idempotency-key"] == "recall-PAY-3107-r1"
    assert body["client_reference"] == "PAY-3107-r1"
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert body["expires_at"] == attempt["send_deadline"]  # expires_at = the send deadline
    assert await run_recall(world, job) == "grant.consumed"  # single use: a redelivery sends nothing
    assert len(recall_calls(world)) == 1
    world.clock.advance(60)
    assert await reconcile_recalls(world) == 1
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert (attempt["state"], attempt["outcome_reason"]) == ("Succeeded", "provider.recalled")
    assert attempt["provider_recall_id"].startswith("prc_")
    assert [g["state"] for g in payout["recalls"]["grants"]] == ["Consumed"]
    assert original(payout) == original(before)  # the payout's own records stay as they are
    assert await world.totals() == (AMOUNT, 0)
    events = [e["detail"]["event"] for e in await world.history() if e["kind"] == "recall"]
    assert events[:3] == ["decision", "grant-issued", "claimed"]
    again = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert (again["outcome"], again["reason"], again["grant"]) == ("Denied", "recall.already-recalled", None)
    assert len(recall_calls(world)) == 1


async def test_a_payout_that_is_not_paid_is_refused_with_no_decision_and_no_call(world: World) -> None:
    await world.put("/v1/policy/payout.recall", {"version": RECALL_POLICY})
    await world.create()
    response = await world.post("/v1/payouts/PAY-3107/recall")
    assert response.status_code == 409
    assert response.json()["code"] == "payout.not_recallable"
    assert (await world.post("/v1/payouts/PAY-3107/recall", who="other_tenant")).status_code == 404
    payout = await world.payout()
    assert payout["recalls"] == {"decisions": [], "grants": [], "attempts": []}
    assert await world.rows("SELECT 1 FROM outbox_messages WHERE kind = 'payout-recall-job'") == []
    assert recall_calls(world) == []


async def test_a_lost_recall_response_is_reconciled_by_reference_without_a_resend(world: World) -> None:
    """"A recall that fails or becomes Unknown is reconciled the same way": the lookup by
    ``<payout_id>-r<N>`` resolves it; one recall call in total."""
    before = await paid(world)
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    job = await recall_job(world, decision["grant"]["grant_id"])
    assert await run_recall(world, job) == "Unknown"
    refused = await world.post("/v1/payouts/PAY-3107/recall")
    assert (refused.status_code, refused.json()["code"]) == (409, "payout.attempt_unresolved")
    world.clock.advance(60)
    world.cardco.settle()
    assert await reconcile_recalls(world) == 1
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert (attempt["state"], attempt["client_reference"]) == ("Succeeded", "PAY-3107-r1")
    assert (len(recall_calls(world)), len(recall_lookups(world))) == (1, 1)
    assert [d["outcome"] for d in payout["recalls"]["decisions"]] == ["Allowed"]  # the 409 wrote no decision
    assert original(payout) == original(before)


async def test_a_recall_outside_the_window_fails_final_and_the_payout_stays_paid(world: World) -> None:
    """Section 17: the provider may support a recall "only within a window"; a documented
    no-effect ``failed`` is final."""
    before = await paid(world)
    world.clock.advance(world.cardco.config.payout_recall_window_s + 60)
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Failed"
    payout = await world.payout()
    [attempt] = payout["recalls"]["attempts"]
    assert (attempt["state"], attempt["outcome_reason"]) == ("Failed", "recall_window_closed")
    assert original(payout) == original(before)


async def test_without_a_recall_policy_release_the_decision_is_deferred(world: World) -> None:
    await world.run(await world.approved())
    world.clock.advance(60)
    await world.reconcile()
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert (decision["outcome"], decision["reason"], decision["grant"]) == ("Deferred", "context.unavailable", None)
    assert recall_calls(world) == []
