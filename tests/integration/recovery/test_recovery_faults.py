"""Recovery under pauses, lost acknowledgements and lost leases (seed 004 test matrix).

A worker "pausing" between two steps is simulated by wrapping the real step so the injected clock
moves right after it commits; a lost commit acknowledgement by raising the driver's error after
(intent present) or instead of (intent absent) the real commit. Everything else is real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.payments.leases import Leases
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import WorkerFactory
from tests.integration.recovery.test_recovery_loop import escalations, row, unknown_payment


def after_commit(monkeypatch: pytest.MonkeyPatch, then: Callable[[], Awaitable[None] | None]) -> None:
    """Run ``then`` right after the real commit_intent (a worker pausing after its intent)."""
    real = Leases.commit_intent

    async def paused(self: Leases, *args: Any) -> bool:
        committed = await real(self, *args)
        result = then()
        if result is not None:
            await result
        return committed

    monkeypatch.setattr(Leases, "commit_intent", paused)


async def kinds(shop: Shop, attempt_id: Any) -> list[str]:
    return await shop.events(attempt_id)


async def test_a_worker_paused_past_the_deadline_after_its_intent_abandons_the_send(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 matrix: "A recovery worker that pauses before its final dispatch check and resumes
    after the escalation deadline records send_abandoned and does not send"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    clock.advance(23 * 3600 - 30)  # 30 s before the deadline
    after_commit(monkeypatch, lambda: clock.advance(40) and None)
    assert (await worker().sweep()).outcomes == {"escalated:deadline": 1}
    assert (await kinds(shop, attempt["attempt_id"]))[-2:] == ["send_intent", "send_abandoned"]
    assert len(shop.provider_requests()) == 1, "nothing was resent"
    assert await escalations(shop) == [f"attempt:{attempt['attempt_id']}:deadline"]


async def test_a_worker_whose_lease_lapsed_after_its_intent_abandons_and_leaves_scheduling_to_the_new_owner(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 matrix: "A recovery send whose final local check fails after its intent committed
    records send_abandoned and sends nothing"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    clock.advance(60)
    after_commit(monkeypatch, lambda: clock.advance(61) and None)  # past the 60 s lease
    assert (await worker().sweep()).outcomes == {"send-abandoned": 1}
    assert len(shop.provider_requests()) == 1
    current = await row(shop, attempt["attempt_id"])
    assert current["recovery_owner"] is not None, "the lapsed lease is left to expire, not released"
    monkeypatch.undo()
    assert (await worker("recovery-2").sweep()).outcomes == {"resent:succeeded->Succeeded": 1}


@pytest.mark.parametrize("intent_present", [True, False])
async def test_a_lost_intent_acknowledgement_sends_nothing_and_the_next_pass_reads_the_history(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
        intent_present: bool) -> None:
    """Seed 004 matrix: "A send_intent commit confirmed not to have happened reschedules; one whose
    acknowledgement is lost sends nothing and leaves the next claimed pass to find the intent present
    or absent and act accordingly; both cases are tested with the intent present and absent"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    real = Leases.commit_intent

    async def lost(self: Leases, *args: Any) -> bool:
        if intent_present:
            await real(self, *args)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(Leases, "commit_intent", lost)
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"intent-unconfirmed": 1}
    assert len(shop.provider_requests()) == 1, "a lookup, but no resend"
    history = await kinds(shop, attempt["attempt_id"])
    assert history.count("send_intent") == (2 if intent_present else 1)
    monkeypatch.undo()
    assert (await worker("recovery-2").sweep()).outcomes is None, "the unfinished lease still holds"
    clock.advance(61)
    outcome = (await worker("recovery-2").sweep()).outcomes
    assert outcome == {"resent:succeeded->Succeeded": 1}
    lookup = await shop.services.db.fetch_one(
        "SELECT detail FROM payment_attempt_events WHERE attempt_id = %(a)s AND kind = 'lookup'"
        " ORDER BY event_id DESC LIMIT 1", {"a": attempt["attempt_id"]})
    assert lookup is not None and lookup["detail"]["ambiguous_send_boundary"] is intent_present
    assert len(shop.ledger()) == 1


async def test_an_intent_confirmed_not_committed_reschedules_without_sending(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 matrix: "A failed or unconfirmed send_intent write results in no request to the provider
    in that cycle" — here the order is cancelled between the resend check and the intent, so the
    intent's own re-check under the order lock refuses it (a cancellation committed before a
    recovery send_intent prevents that send)."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    real = Leases.commit_intent

    async def cancelled_first(self: Leases, *args: Any) -> bool:
        await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
        return await real(self, *args)

    monkeypatch.setattr(Leases, "commit_intent", cancelled_first)
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"scheduled": 1}
    assert len(shop.provider_requests()) == 1 and (await kinds(shop, attempt["attempt_id"])).count("send_intent") == 1
    monkeypatch.undo()
    clock.advance(120)
    assert (await worker().sweep()).outcomes == {"escalated:resend-not-safe:order-not-payable": 1}


async def test_a_lease_lost_during_an_inflight_resend_makes_no_second_payment(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A recovery worker whose lease expires while its send is in flight does not
    cause a second payment when another worker resends inside the window" (the provider's key does)."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 300},
                      {"operation": "list_payments", "action": "not_found_for_s", "not_found_for_s": 3600, "times": 0})
    clock.advance(60)
    slow = asyncio.create_task(worker("recovery-slow").sweep())
    for _ in range(400):
        if len(shop.provider_requests()) == 2:  # the slow worker's resend has reached CardCo
            break
        await asyncio.sleep(0.01)
    clock.advance(61)  # the slow worker's lease lapses while its send is in flight (its call budget too)
    assert (await slow).outcomes == {"resent:unknown->Unknown": 1}
    assert len(shop.ledger()) == 1, "the slow send took effect; its answer never came back"
    clock.advance(60)
    fast = await worker("recovery-fast").sweep()
    assert fast.outcomes == {"resent:succeeded->Succeeded": 1}
    assert len(shop.provider_requests()) == 3
    assert len(shop.ledger()) == 1, "both resends carried the attempt's key"
    assert (await row(shop, attempt["attempt_id"]))["state"] == "Succeeded"


async def test_a_recorded_id_that_misses_falls_back_to_the_client_reference(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A lookup by recorded provider payment ID that misses falls back to the client
    reference before the attempt is treated as not found"."""
    await shop.order(payment_method="pm_card_3ds")
    started = (await shop.pay()).json()
    paid = len(shop.cardco.store.requests)  # after the payment's answer (on Stripe, its client-secret read)
    await shop.faults({"operation": "get_payment", "action": "not_found_for_s", "not_found_for_s": 7200, "times": 0})
    await shop.authenticate(started["provider_payment_id"])
    clock.advance(3600)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    paths = [r["path"] for r in shop.cardco.store.requests[paid:] if r["method"] == "GET"]
    assert paths == [shop.path(1, id=started["provider_payment_id"]), shop.path(2, reference="ORD-5521-a1")]


async def test_a_record_owned_by_another_attempt_resolves_nothing_and_escalates(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A record carrying a different provider payment ID, or one already owned by
    another attempt, resolves nothing and escalates" (a recorded ID can be wrong: here ORD-A's
    attempt wrongly recorded the payment that CardCo took for ORD-B)."""
    await shop.order("ORD-A")
    first = (await shop.pay("ORD-A")).json()
    attempt = await unknown_payment(shop, "ORD-B", action="drop_response")
    taken_for_b = next(p for p in shop.ledger() if p["client_reference"] == attempt["client_reference"])
    async with shop.services.db.transaction() as conn:
        await conn.execute("UPDATE payment_attempts SET provider_payment_id = %(p)s WHERE attempt_id = %(a)s",
                           {"p": taken_for_b["id"], "a": first["attempt_id"]})
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Unknown": 1}
    assert await escalations(shop) == [f"attempt:{attempt['attempt_id']}:provider-id-conflict"]
    current = await row(shop, attempt["attempt_id"])
    assert current["state"] == "Unknown" and current["provider_payment_id"] is None
    assert current["next_check_at"] > clock.now() and current["recovery_owner"] is None
