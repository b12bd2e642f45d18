"""The recovery loop against real PostgreSQL and CardCo with one ManualClock (seed 004, "The
Recovery Loop" and its test matrix). Default account timings: abandonment 60 s, call 15 s,
record 5 s, processing 10 s, backoff 60/120/300/900 s, key window 24 h less a 1 h margin."""

from __future__ import annotations

import asyncio
import base64
from datetime import timedelta
from typing import Any

from gateway.clock import ManualClock
from gateway.recovery.loop import Recovery
from tests.integration.checkout.conftest import CONTEXT_HEADERS, Shop
from tests.integration.recovery.conftest import WorkerFactory

SETTLED_S = 15 + 5 + 10  # call + record budgets + processing allowance


async def unknown_payment(shop: Shop, order_id: str = "ORD-5521", **fault: Any) -> dict[str, Any]:
    """An order whose first send ended without an answer (the fault decides whether it took effect)."""
    await shop.order(order_id)
    await shop.faults({"operation": "create_payment", **fault})
    response = await shop.pay(order_id)
    assert response.json()["state"] == "Unknown", response.text
    await shop.faults()
    return response.json()


async def row(shop: Shop, attempt_id: Any) -> dict[str, Any]:
    return await shop.services.attempts.get(attempt_id)


async def escalations(shop: Shop) -> list[str]:
    rows = await shop.services.db.fetch_all("SELECT escalation_key FROM payment_escalations ORDER BY escalation_id")
    return [r["escalation_key"] for r in rows]


async def test_recovery_that_finds_the_payment_resolves_it_with_one_payment(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "Recovery that finds the payment resolves it to Succeeded with one payment in total"."""
    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(60)
    report = await worker().sweep()
    assert report.outcomes == {"found:succeeded->Succeeded": 1}
    resolved = await row(shop, attempt["attempt_id"])
    assert resolved["state"] == "Succeeded" and resolved["recovery_owner"] is None
    assert len(shop.ledger()) == 1 and len(shop.provider_requests()) == 1
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    assert (await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)).json()["state"] == "Paid"


async def test_a_request_that_never_arrived_is_resent_once_with_identical_bytes(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A request that never arrived: the lookup returns "not found", the attempt
    stays Unknown, and a same-key resend inside the window produces exactly one payment" and "Every
    resend carries the same key, endpoint, API version, account context, and byte-identical body"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    assert shop.ledger() == []
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"resent:succeeded->Succeeded": 1}
    first, resend = shop.provider_requests()
    assert first["body_base64"] == resend["body_base64"]
    assert base64.b64decode(resend["body_base64"]).decode() == (await row(shop, attempt["attempt_id"]))["request_body"]
    for header in ("idempotency-key", *CONTEXT_HEADERS[shop.provider]):
        assert first["headers"][header] == resend["headers"][header]
    assert len(shop.ledger()) == 1
    assert await shop.events(attempt["attempt_id"]) == [
        "send_intent", "send_result", "transition", "lookup", "send_intent", "send_result", "transition"]


async def test_a_late_original_after_the_lookup_still_makes_one_payment(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A variant in which the original request arrives late, after the lookup,
    must also produce exactly one payment": the payment exists but is not yet visible to lookups,
    so recovery resends under the same key and CardCo answers with the original's saved result."""
    attempt = await unknown_payment(shop, action="drop_response")
    await shop.faults({"operation": "list_payments", "action": "not_found_for_s", "not_found_for_s": 3600,
                       "times": 0})
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"resent:succeeded->Succeeded": 1}
    assert len(shop.ledger()) == 1 and len(shop.provider_requests()) == 2
    assert (await row(shop, attempt["attempt_id"]))["provider_payment_id"] == shop.ledger()[0]["id"]


async def test_a_failed_lookup_is_not_not_found_and_reschedules_on_the_backoff(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A failed provider lookup (transport error, 429, or 5xx) leaves the attempt
    Unknown, is not counted as "not found", and reschedules on backoff"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    for number, action in enumerate(("timeout_before_effect", "error_500_before_effect", "malformed_body"), start=1):
        clock.advance(3600)
        await shop.faults({"operation": "list_payments", "action": action})
        assert (await worker().sweep()).outcomes == {"scheduled": 1}, action
        current = await row(shop, attempt["attempt_id"])
        assert current["state"] == "Unknown" and current["recovery_owner"] is None
        backoff = (60, 120, 300)[number - 1]
        assert current["next_check_at"] == clock.now() + timedelta(seconds=backoff)
    assert len(shop.provider_requests()) == 1, "nothing was resent"


async def test_a_429_pauses_lookups_for_that_account_only(shop: Shop, worker: WorkerFactory, clock: ManualClock,
                                                        provider: str) -> None:
    """Seed 004 matrix: "A 429 in one provider account pauses lookups for that rate-limit scope only".
    The pause is CardCo's ``Retry-After`` (120 s); Stripe does not document the header, so on
    Stripe it is the lookup backoff's first step (60 s) whatever the header says (docs/decisions/0072)."""
    from tests.conftest import LIVE_ACCOUNT

    test_attempt = await unknown_payment(shop, "ORD-T1", action="drop_response")
    clock.advance(1)  # ORD-T1 is due first; the others, one second later
    await shop.order("ORD-T2")
    await shop.faults({"operation": "create_payment", "action": "drop_response", "times": 0})
    await shop.pay("ORD-T2")
    await shop.order("ORD-L1", account=LIVE_ACCOUNT)
    await shop.pay("ORD-L1")
    await shop.faults({"operation": "list_payments", "action": "rate_limit", "retry_after_s": 120,
                       "client_reference": "ORD-T1-a1"})
    clock.advance(60)
    outcomes = (await worker().sweep()).outcomes
    # The first test-account lookup is rate limited and pauses its scope: the second test-account
    # attempt is not claimed (the next claim skips the paused scope), while the live account goes on.
    assert outcomes == {"scheduled": 1, "found:succeeded->Succeeded": 1}
    assert (await row(shop, test_attempt["attempt_id"]))["state"] == "Unknown"
    states = {a["order_id"]: a["state"] for o in ("ORD-T1", "ORD-T2", "ORD-L1") for a in await shop.attempts(o)}
    assert states == {"ORD-T1": "Unknown", "ORD-T2": "Unknown", "ORD-L1": "Succeeded"}
    await shop.faults()
    if provider == "cardco":
        clock.advance(60)
        assert (await worker().sweep()).outcomes is None, "the test account is still paused"
    clock.advance(60)
    # The pause is over; the 429 emptied the account's lookup bucket and it refills from the end of
    # the pause (docs/decisions/0042): the first claim waits, and the sweep claims no more of it.
    assert (await worker().sweep()).outcomes == {"deferred:lookup-rate": 1}
    clock.advance(1)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Succeeded": 2}


async def test_past_the_escalation_deadline_nothing_is_sent_but_lookups_still_resolve(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A resend after the minimum key window ... does not happen; the attempt is
    escalated" and "An attempt past its escalation deadline is never resent, but is still resolved
    by a later lookup or notification"; an escalated attempt keeps being looked up on the slower cadence."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    clock.advance(23 * 3600)
    assert (await worker().sweep()).outcomes == {"escalated:deadline": 1}
    assert await escalations(shop) == [f"attempt:{attempt['attempt_id']}:deadline"]
    assert len(shop.provider_requests()) == 1
    current = await row(shop, attempt["attempt_id"])
    assert current["next_check_at"] == clock.now() + timedelta(seconds=900) and current["recovery_owner"] is None
    clock.advance(900)
    assert (await worker().sweep()).outcomes == {"escalated:deadline": 1}, "one open episode, looked up again"
    assert len(await escalations(shop)) == 1
    # The customer's payment arrives by another path; the next lookup resolves it and its escalation.
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    stored = await row(shop, attempt["attempt_id"])
    from gateway.payments.attempts import stored_request

    await shop.services.payments.create_payment(stored_request(stored), budget_s=5)
    clock.advance(900)
    assert (await worker().sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    open_rows = await shop.services.db.fetch_all("SELECT 1 FROM payment_escalations WHERE resolved_at IS NULL")
    assert open_rows == []


async def test_a_replayed_500_or_a_rejected_resend_leaves_unknown(shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A replayed 500, or a same-key resend rejected before execution, leaves an
    attempt whose first send timed out Unknown"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    for action in ("error_500_before_effect", "rate_limit"):
        await shop.faults({"operation": "create_payment", "action": action})
        clock.advance(3600)
        outcomes = (await worker().sweep()).outcomes
        assert outcomes is not None and list(outcomes)[0].endswith("->Unknown"), (action, outcomes)
        assert (await row(shop, attempt["attempt_id"]))["state"] == "Unknown"


async def test_a_stranded_not_started_attempt_is_closed_and_a_new_checkout_succeeds(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A crash after inserting NotStarted and before the first send leaves an
    attempt the recovery loop closes as NotApplied after the abandonment threshold, after which a
    new checkout succeeds" and "A young NotStarted attempt that recovery picks up is rescheduled,
    never sent by recovery"."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    clock.advance(59)
    assert (await worker().sweep()).outcomes is None, "not due before its next_check_at"
    clock.advance(1)
    assert (await worker().sweep()).outcomes == {"closed-never-sent": 1}
    closed = await row(shop, attempt["attempt_id"])
    assert (closed["state"], closed["outcome_reason"], closed["first_sent_at"]) == ("NotApplied", "never-sent", None)
    assert shop.provider_requests() == []
    again = await shop.pay()
    assert (again.json()["state"], again.json()["attempt_number"]) == ("Succeeded", 2)


async def test_a_young_not_started_attempt_is_rescheduled_for_the_rest_of_the_threshold(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    async with shop.services.db.transaction() as conn:  # due early, e.g. by an operator's nudge
        await conn.execute("UPDATE payment_attempts SET next_check_at = %(now)s", {"now": clock.now()})
    clock.advance(20)
    assert (await worker().sweep()).outcomes == {"scheduled": 1}
    current = await row(shop, attempt["attempt_id"])
    assert current["state"] == "NotStarted" and current["next_check_at"] == attempt["created_at"] + timedelta(seconds=60)
    assert shop.provider_requests() == []


async def test_a_stale_not_started_started_by_the_endpoint_meanwhile_is_rescheduled_not_closed(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A stale NotStarted attempt the endpoint starts just as recovery tries to
    close it is rescheduled for its new state, not closed and not double-finished"."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    clock.advance(61)
    recovery = worker()
    claimed = await recovery._leases.claim(attempt["attempt_id"], recovery.owner)  # noqa: SLF001 - the race's first half
    assert claimed is not None
    started = await shop.services.attempts.mark_started(attempt)
    assert started is not None
    from gateway.payments.leases import Lease
    from gateway.recovery.loop import timings

    lease = Lease(recovery.owner, claimed["lease_token"], claimed["lease_expires_at"], 60, 900)
    outcome = await recovery._close_never_sent(claimed, timings(shop.services.settings.provider_accounts[0],  # noqa: SLF001
                                                                shop.services.settings), lease)
    assert outcome == "scheduled"
    current = await row(shop, attempt["attempt_id"])
    assert current["state"] == "Started" and current["recovery_owner"] is None
    assert current["next_check_at"] == started["first_sent_at"] + timedelta(seconds=SETTLED_S)


async def test_a_crash_between_intent_and_send_is_reconciled_then_resent(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A crash between the send_intent commit and the send leaves an attempt that
    recovery resolves as Unknown, and the history shows an intent with no result" and "A recovery
    pass that finds a send_intent without a result reconciles it before any new intent"."""
    await shop.order()
    attempt = await shop.services.attempts.mark_started(await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    clock.advance(SETTLED_S - 1)
    assert (await worker().sweep()).outcomes is None
    clock.advance(1)
    assert (await worker().sweep()).outcomes == {"resent:succeeded->Succeeded": 1}
    lookup = await shop.services.db.fetch_one(
        "SELECT detail FROM payment_attempt_events WHERE attempt_id = %(a)s AND kind = 'lookup'",
        {"a": attempt["attempt_id"]})
    assert lookup is not None and lookup["detail"]["ambiguous_send_boundary"] is True
    assert [r["path"] for r in shop.cardco.store.requests] == [
        shop.path(2, reference="ORD-5521-a1"), shop.path(3, method="pm_card_visa"), shop.path(0)]


async def test_two_workers_racing_one_attempt_make_one_pass(shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004: the claim keeps two healthy workers off one attempt (real concurrency)."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    clock.advance(60)
    first, second = worker("recovery-a"), worker("recovery-b")
    outcomes = await asyncio.gather(first.run_pass(attempt["attempt_id"]), second.run_pass(attempt["attempt_id"]))
    assert sorted(outcomes) == ["not-claimed", "resent:succeeded->Succeeded"]
    assert len(shop.ledger()) == 1 and len(shop.provider_requests()) == 2


async def test_a_stale_workers_finish_cannot_clear_the_new_owners_lease(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "a stale worker's finish cannot clear another worker's lease" and "A worker
    applying a valid provider outcome after its lease was reclaimed records the outcome but cannot
    release the new owner's lease"."""
    from gateway.domain.attempts import Evidence
    from gateway.payments.leases import Lease

    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(60)
    stale, fresh = worker("recovery-stale"), worker("recovery-fresh")
    old = await stale._leases.claim(attempt["attempt_id"], stale.owner)  # noqa: SLF001
    assert old is not None
    clock.advance(61)  # past the 60 s lease
    new = await fresh._leases.claim(attempt["attempt_id"], fresh.owner)  # noqa: SLF001
    assert new is not None
    old_lease = Lease(stale.owner, old["lease_token"], old["lease_expires_at"], 60, 900)
    assert await stale._leases.finish(attempt["attempt_id"], old_lease, 60) is False  # noqa: SLF001
    success = Evidence(finding="succeeded", provider_account=old["provider_account"], amount_minor=4250,
                       currency="EUR", provider_id=shop.ledger()[0]["id"])
    await shop.services.attempts.apply_evidence(attempt["attempt_id"], success, actor=stale.owner, kind="lookup",
                                                lease=old_lease)
    current = await row(shop, attempt["attempt_id"])
    assert current["state"] == "Succeeded"
    assert (current["recovery_owner"], current["lease_token"]) == (fresh.owner, new["lease_token"])


async def test_a_notification_that_resolves_first_wins_over_a_recovery_escalation(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A notification that resolves an attempt while recovery is about to escalate it
    wins: no escalation is raised for the resolved attempt"."""
    from gateway.domain.attempts import Evidence
    from gateway.payments.leases import Lease

    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(23 * 3600)
    recovery = worker()
    claimed = await recovery._leases.claim(attempt["attempt_id"], recovery.owner)  # noqa: SLF001
    assert claimed is not None
    await shop.services.attempts.apply_evidence(attempt["attempt_id"], Evidence(
        finding="succeeded", provider_account=claimed["provider_account"], amount_minor=4250, currency="EUR"),
        actor="notification-handler", kind=None)
    lease = Lease(recovery.owner, claimed["lease_token"], claimed["lease_expires_at"], 60, 900)
    assert await recovery._leases.escalate_and_finish(claimed, lease, "deadline", 900) is False  # noqa: SLF001
    assert await escalations(shop) == []


async def test_an_unknown_attempt_found_requiring_action_moves_to_started_and_shows_it(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "An Unknown attempt found to require customer action moves to Started and shows
    the action to the customer" and "An attempt waiting for customer action is rescheduled to the
    action's expiry or the next status check"."""
    await shop.order(payment_method="pm_card_3ds")
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    await shop.pay()
    await shop.faults()
    clock.advance(60)
    outcomes = (await worker().sweep()).outcomes
    assert outcomes == {"found:requires_action->Started": 1}
    polled = await shop.status()
    assert polled.status_code == 200 and polled.json()["next_action"] is not None
    [attempt] = await shop.attempts()
    assert attempt["next_check_at"] == clock.now() + timedelta(seconds=60)  # the next status check, before expiry
    assert len(shop.provider_requests()) == 1, "recovery never resends an attempt waiting for the customer"


async def test_a_cancelled_order_is_not_resent_and_is_escalated(shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004: resend conditions — an order no longer payable escalates resend-not-safe and sends nothing;
    "Two different failed resend conditions ... open separate escalations"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    clock.advance(60)
    assert (await worker().sweep()).outcomes == {"escalated:resend-not-safe:order-not-payable": 1}
    accounts = shop.services.settings.provider_accounts
    index = next(i for i, configured in enumerate(accounts) if configured.id == shop.account)
    account = accounts[index]
    accounts[index] = account.model_copy(update={"api_version": "2027-01-01"})
    try:
        async with shop.services.db.transaction() as conn:
            await conn.execute("UPDATE orders SET state = 'Open'")
        clock.advance(900)
        assert (await worker().sweep()).outcomes == {"escalated:resend-not-safe:request-not-buildable": 1}
    finally:
        accounts[index] = account
    assert await escalations(shop) == [f"attempt:{attempt['attempt_id']}:resend-not-safe:order-not-payable",
                                       f"attempt:{attempt['attempt_id']}:resend-not-safe:request-not-buildable"]
    assert len(shop.provider_requests()) == 1


async def test_a_sweep_skips_an_attempt_another_worker_is_claiming(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Docs/decisions/0033: claims skip rows another worker holds (FOR UPDATE SKIP
    LOCKED) instead of listing the same due attempts and waiting for, then losing, their claims.
    Real concurrency: a second connection holds the first due attempt's row lock mid-claim."""
    held = await unknown_payment(shop, "ORD-A", action="drop_response")
    clock.advance(1)
    other = await unknown_payment(shop, "ORD-B", action="drop_response")
    clock.advance(60)
    async with shop.services.db.pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM payment_attempts WHERE attempt_id = %(a)s FOR NO KEY UPDATE",
                           {"a": held["attempt_id"]})
        report = await worker("recovery-b").sweep()
        assert report.claimed == 1 and report.outcomes == {"found:succeeded->Succeeded": 1}
    assert (await row(shop, other["attempt_id"]))["state"] == "Succeeded"
    assert (await row(shop, held["attempt_id"]))["state"] == "Unknown"


async def test_a_worker_runs_its_claimed_passes_together(shop: Shop, worker: WorkerFactory, clock: ManualClock,
                                                         ) -> None:
    """Docs/decisions/0033: with recovery_concurrency N a sweep claims N due attempts in one
    statement and runs their passes at once; every one is resolved exactly once."""
    attempts = [await unknown_payment(shop, f"ORD-C{n}", action="drop_response") for n in range(3)]
    clock.advance(60)
    services = shop.services
    recovery = Recovery(services.settings, services.clock, services.db, services.attempts, services.payments,
                        owner="recovery-c", concurrency=2)
    report = await recovery.sweep()
    assert report.claimed == 3 and report.outcomes == {"found:succeeded->Succeeded": 3}
    assert [(await row(shop, a["attempt_id"]))["state"] for a in attempts] == ["Succeeded"] * 3
