"""Seed 000, "Reconcile Before Any New Attempt" and "What Makes a Payout Attempt Materially New":
Trace G, the reconciliation rows of the matrix, and the Additional tests about two attempts,
returns and NotApplied. The reconciler only reads: every test also counts submits."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.metrics_support import scrape
from tests.integration.payouts.conftest import AMOUNT, TOKEN, World

SEND_DEADLINE_S, SKEW_S, VISIBILITY_S = 300, 30, 10  # settings defaults; the account's processing allowance


async def _escalations(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason, details FROM payment_escalations "
                            "WHERE resolved_at IS NULL ORDER BY escalation_id")


async def test_trace_g_reconciliation_confirms_success_without_a_duplicate_payout(world: World) -> None:
    """Matrix: "Reconciliation finds the payout completed -> 0 additional calls, Succeeded, Paid";
    Trace G: provider submit calls in total 1, one lookup; the reservation moves to paid."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    await world.run(job)
    world.clock.advance(60)
    assert await world.reconcile() == 1
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert (len(world.submits()), len(world.lookups())) == (1, 1)
    assert await world.totals() == (AMOUNT, 0)


async def test_a_record_whose_amount_does_not_match_escalates_and_stays_unknown(world: World) -> None:
    """Matrix: "Reconciliation finds a record whose amount or destination does not match the
    attempt -> Unknown, escalated" (section 13: verify before trusting a found record)."""
    await world.faults({"operation": "create_payout", "action": "timeout_before_effect"})
    job = await world.approved()
    assert await world.run(job) == "Unknown"
    async with httpx.AsyncClient(base_url="http://cardco.test", headers={
            "Authorization": "Bearer ck_test_key", "CardCo-Account": "cardco:acct_store:test",
            "Idempotency-Key": "someone-else"}) as rogue:
        await rogue.post("/v1/payouts", json={"amount_minor": 1, "currency": "EUR", "destination_token": "x",
                                              "client_reference": "PAY-3107-a1",
                                              "expires_at": "2026-12-01T00:00:00Z"})
    world.clock.advance(60)
    await world.reconcile()
    assert (await world.payout())["state"] == "Unknown"
    [escalation] = await _escalations(world)
    assert escalation["reason"] == "payout-mismatch"
    assert escalation["details"]["client_reference"] == "PAY-3107-a1"


async def test_not_found_becomes_not_applied_only_after_expiry_skew_and_visibility(world: World) -> None:
    """Matrix: "Reconciliation proves not applied, under all three conditions -> NotApplied,
    Approved awaiting fresh decision"; Additional: "reconciliation never records NotApplied before
    the attempt's request expiry plus skew"; an earlier "not found" is never reused."""
    await world.faults({"operation": "create_payout", "action": "timeout_before_effect"})
    job = await world.approved()
    await world.run(job)
    world.clock.advance(SEND_DEADLINE_S + SKEW_S)  # expiry + skew, but not the visibility delay
    await world.reconcile()
    assert (await world.payout())["state"] == "Unknown"
    world.clock.advance(VISIBILITY_S + 120)
    await world.reconcile()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Approved", "NotApplied")
    assert await world.totals() == (0, 0)
    assert len(world.submits()) == 1


async def test_a_materially_new_attempt_needs_a_new_decision_grant_and_key(world: World) -> None:
    """Section 16 and Additional: "a materially new attempt needs a new decision and grant"; with
    two attempts, "reconciliation resolves each from its own provider record"."""
    await world.faults({"operation": "create_payout", "action": "timeout_before_effect"},
                       {"operation": "create_payout", "action": "drop_response", "nth": 2})
    first_job = await world.approved()
    await world.run(first_job)
    world.clock.advance(SEND_DEADLINE_S + SKEW_S + VISIBILITY_S + 60)
    await world.reconcile()
    response = await world.post("/v1/payouts/PAY-3107/reauthorize", {})
    decision = response.json()
    assert (decision["outcome"], decision["grant"]["attempt_number"]) == ("Allowed", 2), decision
    second_job = await world.job(decision["grant"]["grant_id"])
    assert await world.run(first_job) == "grant.consumed"  # the consumed grant is never reset
    assert await world.run(second_job) == "Unknown"
    assert [b["client_reference"] for b in world.sent_bodies()] == ["PAY-3107-a1", "PAY-3107-a2"]
    assert [r["headers"]["idempotency-key"] for r in world.submits()] == ["payout-PAY-3107-a1", "payout-PAY-3107-a2"]
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout()
    assert [a["state"] for a in payout["attempts"]] == ["NotApplied", "Succeeded"]
    assert payout["state"] == "Paid"
    assert [g["attempt_number"] for g in payout["grants"]] == [1, 2]
    assert len(world.ledger()) == 1


async def test_reconciliation_that_cannot_tell_escalates_at_its_deadline(world: World) -> None:
    """Matrix: "Reconciliation cannot tell -> 0 additional calls, Unknown, escalated". Seed 000
    section 21 ("Reconciliation outcomes ... or escalation"; seed 004
    "Escalations"): /metrics counts the failed lookups and shows the open episode and its age."""
    await world.faults({"operation": "create_payout", "action": "drop_response"},
                       {"operation": "list_payouts", "action": "error_500_before_effect", "times": 0})
    job = await world.approved()
    await world.run(job)
    for _ in range(8):
        world.clock.advance(900)
        await world.reconcile()
    assert (await world.payout())["state"] == "Unknown"
    assert [e["reason"] for e in await _escalations(world)] == ["payout-deadline"]
    assert len(world.submits()) == 1

    seen = await scrape(world.http)
    failed = seen.value("paygate_payout_reconciliations_total", kind="payout", outcome="lookup_failed")
    assert failed == len(world.lookups()) >= 2
    assert seen.total("paygate_provider_call_seconds_count", kind="payout", operation="lookup",
                      outcome="server_error") == failed
    assert seen.value("paygate_escalations_open", reason="payout-deadline") == 1
    assert seen.value("paygate_payout_escalations_open", kind="payout", reason="payout-deadline") == 1
    open_for = seen.value("paygate_payout_escalations_oldest_open_seconds", kind="payout", reason="payout-deadline")
    world.clock.advance(600)
    assert (await scrape(world.http)).value("paygate_payout_escalations_oldest_open_seconds", kind="payout",
                                            reason="payout-deadline") == open_for + 600


async def test_a_return_after_completion_is_a_separate_event_not_a_failure(world: World) -> None:
    """Additional: "a provider return after completion is recorded as a separate event, not as a
    Failed attempt" (section 13, "A return is not a rejection")."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    await world.run(job)
    world.clock.advance(5)
    [provider_payout] = world.cardco.store.payouts.values()
    world.cardco.settle()
    provider_payout.change("returned", "account_closed")
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert [r["provider_payout_id"] for r in payout["returns"]] == [provider_payout.id]


async def _open_mismatches(world: World) -> list[dict[str, Any]]:
    return [e for e in await _escalations(world) if e["reason"] == "payout-mismatch"]


async def test_a_found_payout_with_another_id_than_the_recorded_one_is_a_mismatch_and_never_recorded(
        world: World) -> None:
    """Seed 004, "Persisting the Attempt": the provider's id is set "only when it is still NULL",
    checked for "equality when it is already set", a different id for the same attempt is escalated,
    and it "never silently replaces the recorded ID". The attempt recorded CardCo's
    id from its accepted answer; CardCo's listing still hides that payout (a lagging index) and shows
    another one made under the same reference, amount, currency and destination: the reconciler
    escalates a mismatch naming the attempt and both ids, and leaves the attempt as it was."""
    await world.faults({"operation": "create_payout", "action": "not_found_for_s", "not_found_for_s": 3600})
    job = await world.approved()
    assert await world.run(job) == "Started"
    [attempt] = (await world.payout())["attempts"]
    recorded = attempt["provider_payout_id"]
    async with httpx.AsyncClient(base_url="http://cardco.test", headers={
            "Authorization": "Bearer ck_test_key", "CardCo-Account": "cardco:acct_store:test",
            "Idempotency-Key": "someone-else"}) as rogue:
        other = (await rogue.post("/v1/payouts", json={
            "amount_minor": AMOUNT, "currency": "EUR", "destination_token": TOKEN, "client_reference": "PAY-3107-a1",
            "expires_at": "2026-12-31T00:00:00Z"})).json()["id"]
    world.clock.advance(60)  # both payouts paid by now; the lookup shows only the other one
    assert await world.reconcile() == 1
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Executing", "Started")
    assert payout["attempts"][0]["provider_payout_id"] == recorded != other
    [escalation] = await _open_mismatches(world)
    assert escalation["escalation_key"] == f"payout-attempt:{attempt['attempt_id']}:mismatch"
    assert {k: escalation["details"][k] for k in ("attempt_id", "provider_payout_id", "found_provider_payout_id")} \
        == {"attempt_id": attempt["attempt_id"], "provider_payout_id": recorded, "found_provider_payout_id": other}
    assert [r["headers"]["idempotency-key"] for r in world.submits()] == ["payout-PAY-3107-a1", "someone-else"]


async def test_a_second_attempt_claiming_a_recorded_provider_id_is_refused_by_the_index_and_escalated(
        world: World) -> None:
    """Seed 004, "Persisting the Attempt": the unique index "makes the ID unique across attempts
    within its account"; "if recording an ID conflicts with another attempt that already owns it,
    the write fails; the application keeps both attempts exactly as they are, raises an
    investigation" (one_payout_attempt_per_provider_payout, translated by its name).
    PAY-3107's attempt recorded CardCo's payout id; PAY-3108's answer was lost, and CardCo's listing
    then shows PAY-3108's payout under that same id."""
    first = await world.approved("PAY-3107")
    assert await world.run(first) == "Started"
    [owner] = (await world.payout("PAY-3107"))["attempts"]
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    second = await world.approved("PAY-3108")
    assert await world.run(second) == "Unknown"
    [lost] = [p for p in world.cardco.store.payouts.values() if p.client_reference == "PAY-3108-a1"]
    lost.id = owner["provider_payout_id"]  # the provider names two payouts alike
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout("PAY-3108")
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Unknown", "Unknown")
    assert payout["attempts"][0]["provider_payout_id"] is None
    [escalation] = await _open_mismatches(world)
    assert escalation["escalation_key"] == f"payout-attempt:{payout['attempts'][0]['attempt_id']}:mismatch"
    assert (escalation["details"]["attempt_id"], escalation["details"].get("provider_payout_id"),
            escalation["details"]["found_provider_payout_id"]) == \
        (payout["attempts"][0]["attempt_id"], None, owner["provider_payout_id"])
    assert (await world.payout("PAY-3107"))["attempts"][0]["provider_payout_id"] == owner["provider_payout_id"]
