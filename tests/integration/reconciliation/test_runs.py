"""Provider-side reconciliation runs through the real database and the real fake, on CardCo's
dialect and Stripe's (docs/decisions/0071; gateway/reconciliation/runs.py): every object the
provider created in the window is matched to an attempt or escalated, evidence goes through the
one evidence rule, a run resumes after a crash without a second escalation, and its reads leave
recovery its share of the account's lookup tokens (seed 004, "The Recovery Loop": lookups "at a
rate the provider's limits allow"; "Escalations")."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.ratelimits.buckets import LookupTokens
from gateway.reconciliation.runs import Runs
from tests.integration.checkout.conftest import Shop
from tests.integration.reconciliation.conftest import Provider, window

LAG_S = 120  # past the Stripe adapter's documented listing delay (60 s) and the send slack (60 s)


async def paid(shop: Shop, order_id: str) -> dict[str, Any]:
    await shop.order(order_id)
    response = await shop.pay(order_id)
    assert response.json()["state"] == "Succeeded", response.text
    [attempt] = await shop.attempts(order_id)
    return attempt


async def run_over(runs: Runs, shop: Shop, start: Any, clock: ManualClock) -> dict[str, Any]:
    clock.advance(LAG_S)
    run = await runs.start(shop.account, *window(start, clock.now()), "test")
    assert await runs.execute(run["run_id"]) == "finished"
    finished = await runs.get(run["run_id"])
    assert finished is not None
    return finished


def counts(run: dict[str, Any]) -> dict[str, int]:
    return {name: run[name] for name in ("matched", "evidence", "orphan", "disagreement", "missing")}


async def escalations(shop: Shop) -> list[dict[str, Any]]:
    return await shop.services.db.fetch_all(
        "SELECT reason, details FROM payment_escalations WHERE reason LIKE 'provider-%%' ORDER BY escalation_id")


async def findings(shop: Shop, run_id: Any) -> dict[str, str]:
    rows = await shop.services.db.fetch_all(
        "SELECT provider_object_id, class FROM reconciliation_findings WHERE run_id = %(r)s", {"r": run_id})
    return {row["provider_object_id"]: row["class"] for row in rows}


async def test_a_payment_made_at_the_provider_is_an_orphan_and_a_paid_one_is_matched(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    start = clock.now()
    attempt = await paid(shop, "ORD-1")
    orphan = await provider_api.payment("NOT-OURS-1", amount_minor=999)
    run = await run_over(runs, shop, start, clock)
    assert (run["state"], counts(run), run["objects_read"]) == (
        "Finished", {"matched": 1, "evidence": 0, "orphan": 1, "disagreement": 0, "missing": 0}, 2)
    assert await findings(shop, run["run_id"]) == {attempt["provider_payment_id"]: "matched", orphan: "orphan"}
    [escalation] = await escalations(shop)
    assert escalation["reason"] == "provider-orphan"
    assert {key: escalation["details"][key] for key in ("provider_object_id", "kind", "amount_minor", "client_reference")
            } == {"provider_object_id": orphan, "kind": "payment", "amount_minor": 999, "client_reference": "NOT-OURS-1"}


async def test_a_payout_made_outside_is_an_orphan_payout(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    start = clock.now()
    payout = await provider_api.payout("DASHBOARD-1", clock.now() + timedelta(minutes=5))
    run = await run_over(runs, shop, start, clock)
    assert counts(run)["orphan"] == 1
    [escalation] = await escalations(shop)
    assert (escalation["reason"], escalation["details"]["provider_object_id"], escalation["details"]["kind"]) == (
        "provider-orphan", payout, "payout")


async def test_a_tampered_amount_is_a_disagreement_and_the_attempt_is_never_overwritten(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    start = clock.now()
    attempt = await paid(shop, "ORD-2")
    await provider_api.control(f"/objects/{attempt['provider_payment_id']}/amend", {"amount_minor": 1})
    run = await run_over(runs, shop, start, clock)
    assert counts(run)["disagreement"] == 1
    [escalation] = await escalations(shop)
    assert (escalation["reason"], escalation["details"]["provider_object_id"], escalation["details"]["amount_minor"]
            ) == ("provider-disagreement", attempt["provider_payment_id"], 1)
    [after] = await shop.attempts("ORD-2")
    assert (after["state"], after["amount_minor"]) == ("Succeeded", 4250)


async def test_an_object_the_provider_lost_is_missing_only_once_the_listing_delay_has_passed(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    start = clock.now()
    attempt = await paid(shop, "ORD-3")
    await provider_api.control(f"/objects/{attempt['provider_payment_id']}/forget")
    early = await runs.start(shop.account, *window(start, clock.now()), "test")
    assert await runs.execute(early["run_id"]) == "finished"
    assert counts(await runs.get(early["run_id"]) or {})["missing"] == 0, "inside the delay: proves nothing"
    run = await run_over(runs, shop, start, clock)
    assert counts(run)["missing"] == 1
    [escalation] = await escalations(shop)
    assert (escalation["reason"], escalation["details"]["provider_object_id"], escalation["details"]["attempt_id"]) == (
        "provider-missing", attempt["provider_payment_id"], str(attempt["attempt_id"]))


async def test_an_unknown_attempt_is_resolved_by_a_run_through_the_evidence_rule(
        shop: Shop, runs: Runs, clock: ManualClock) -> None:
    start = clock.now()
    await shop.order("ORD-4")
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    assert (await shop.pay("ORD-4")).json()["state"] == "Unknown"
    await shop.faults()
    run = await run_over(runs, shop, start, clock)
    assert (counts(run)["evidence"], counts(run)["orphan"]) == (1, 0)
    [attempt] = await shop.attempts("ORD-4")
    assert attempt["state"] == "Succeeded" and attempt["provider_payment_id"]
    assert "lookup" in await shop.events(attempt["attempt_id"])
    assert await escalations(shop) == []


async def test_a_run_killed_half_way_resumes_and_a_window_run_again_escalates_nothing_twice(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    """The first page commits with its escalation; the run resumes from its stored position; a
    second run of the same window finds the same orphan and raises nothing new."""
    start = clock.now()
    orphan = await provider_api.payment("NOT-OURS-2")
    payout = await provider_api.payout("DASHBOARD-2", clock.now() + timedelta(minutes=5))
    clock.advance(LAG_S)
    frame = window(start, clock.now() - timedelta(seconds=LAG_S))
    run = await runs.start(shop.account, *frame, "test")
    assert await runs.execute(run["run_id"], max_pages=1) == "waiting"
    half = await runs.get(run["run_id"])
    assert half is not None and (half["state"], half["kind_position"], half["orphan"]) == ("Running", 1, 1)
    assert [e["details"]["provider_object_id"] for e in await escalations(shop)] == [orphan]
    assert await runs.execute(run["run_id"]) == "finished"
    done = await runs.get(run["run_id"])
    assert done is not None and (done["state"], done["orphan"]) == ("Finished", 2)
    again = await runs.start(shop.account, *frame, "test")
    assert await runs.execute(again["run_id"]) == "finished"
    assert counts(await runs.get(again["run_id"]) or {})["orphan"] == 2
    assert sorted(e["details"]["provider_object_id"] for e in await escalations(shop)) == sorted([orphan, payout])


async def test_a_rate_limited_account_leaves_recovery_its_share_of_lookup_tokens(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    """Listing reads take only tokens above half the burst; a 429 pauses the account and the run
    waits where it is, to finish later."""
    start = clock.now()
    await provider_api.payment("NOT-OURS-3")
    clock.advance(LAG_S)
    services = shop.services
    account = services.settings.account(shop.account)
    assert account is not None
    rate, burst = services.settings.lookup_limit(account)
    tokens = LookupTokens(services.db, clock, services.settings)
    assert await tokens.take(account, burst - burst // 2 - 1) > 0  # recovery spent some: one above the reserve left
    run = await runs.start(shop.account, *window(start, clock.now() - timedelta(seconds=LAG_S)), "test")
    assert await runs.execute(run["run_id"]) == "waiting"
    assert await tokens.take(account, burst // 2) == burst // 2, "the reserve is recovery's"
    clock.advance(burst / rate)
    await shop.faults({"operation": "list_refunds", "action": "rate_limit", "retry_after_s": 30})
    assert await runs.execute(run["run_id"]) == "waiting"
    stopped = await runs.get(run["run_id"]) or {}
    assert (stopped["orphan"], stopped["kind_position"]) == (1, 1), "the refunds page waits for the pause"
    assert await tokens.take(account, 1) == 0, "the 429 paused the account for every reader"
    await shop.faults()
    clock.advance(60 + burst / rate)
    assert await runs.execute(run["run_id"]) == "finished"


async def test_a_run_killed_inside_a_page_writes_nothing_of_it_and_resumes_with_one_escalation(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    """The run's task dies while its page transaction waits for an order's lock, after recording
    the Unknown attempt's finding (and, on CardCo, oldest first, the orphan's escalation): nothing
    of the page stays; resumed, the page is written once, one escalation, the attempt resolved."""
    start = clock.now()
    orphan = await provider_api.payment("NOT-OURS-K")
    await shop.order("ORD-K")
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    assert (await shop.pay("ORD-K")).json()["state"] == "Unknown"
    await shop.faults()
    clock.advance(LAG_S)
    run = await runs.start(shop.account, *window(start, clock.now()), "test")
    db = shop.services.db
    async with db.transaction() as holder:
        await holder.execute("SELECT 1 FROM orders WHERE order_id = 'ORD-K' FOR UPDATE")
        task = asyncio.create_task(runs.execute(run["run_id"]))
        for _ in range(200):
            waiting = await db.fetch_one("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                         " AND datname = current_database()")
            if waiting and waiting["n"]:
                break
            await asyncio.sleep(0.05)
        assert waiting and waiting["n"], "the page transaction never reached the order's lock"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    half = await runs.get(run["run_id"]) or {}
    assert (half["state"], half["kind_position"], half["objects_read"]) == ("Running", 0, 0)
    assert await findings(shop, run["run_id"]) == {} and await escalations(shop) == []
    assert await runs.execute(run["run_id"]) == "finished"
    done = await runs.get(run["run_id"]) or {}
    assert (done["orphan"], done["evidence"], done["objects_read"]) == (1, 1, 2)
    assert [e["details"]["provider_object_id"] for e in await escalations(shop)] == [orphan]
    [attempt] = await shop.attempts("ORD-K")
    assert attempt["state"] == "Succeeded"
