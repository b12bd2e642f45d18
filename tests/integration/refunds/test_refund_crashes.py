"""Crashes around a refund ("started through the outbox so a crash loses
nothing"). Seed 004 "Downstream Work": "The outbox guarantees that the intent survives a process
crash, provided the database commit is durable"; seed 001: no call before the intent commits, and
"At t5, the application cannot distinguish ..." (a crash after Started is Unknown, found by
reconciliation, never sent blind again); seed 000 "Atomically Claim the Grant": a lapsed Claimed
provably sent nothing (NotStarted), a lapsed Started becomes Unknown; section 16: another try is a
new decision and refund number."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import dramatiq
import pytest

from gateway.clock import ManualClock
from gateway.pipeline import transitions
from gateway.pipeline.sweeper import sweep_leases
from gateway.providers.calls import ProviderCalls
from gateway.refunds.attempts import REFUND
from gateway.refunds.settlement import raise_owed
from tests.integration.refunds.conftest import (
    Shop,
    order,
    paid_after_cancel,
    reconcile_refunds,
    refund_calls,
    refund_job,
    refund_rows,
    refunds_taken,
    run_refund,
)
from tests.integration.test_jobs import run_worker_until_idle


class Crash(BaseException):
    """The worker process dies here: nothing after this line runs, nothing is caught."""


async def test_the_refund_decided_with_a_late_payment_survives_a_crash_and_real_workers_send_it_once(
        shop: Shop, jobs_runtime: dramatiq.Broker) -> None:
    """The process that recorded the payment dies right after its commit: the refund's grant and job
    row are durable, so the outbox dispatcher publishes it later and a real worker refunds once,
    even when the relay publishes the job three times (single-use grant)."""
    from jobs.outbox import dispatch_outbox
    from jobs.refunds import publish_payment_refund_job

    await paid_after_cancel(shop)
    [row] = await shop.services.db.fetch_all("SELECT payload FROM outbox_messages WHERE kind = 'payment-refund-job'")
    dispatch_outbox.send()
    publish_payment_refund_job(row["payload"], shop.services.clock)
    publish_payment_refund_job(row["payload"], shop.services.clock)
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert (await order(shop))["state"] == "Refunded"
    assert (len(refund_calls(shop)), len(refunds_taken(shop))) == (1, 1)
    codes = [e["detail"]["code"] for e in await refund_rows(shop, "payment_refund_history") if e["kind"] == "delivery"]
    assert len(codes) == 2 and set(codes) <= {"grant.consumed", "claim.lost"}  # two workers may race the claim


async def test_a_worker_killed_after_its_claim_sends_nothing_and_a_new_refund_follows(
        shop: Shop, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between the claim and the Started write: no CardCo call; once the lease lapses the
    sweeper records NotStarted (provably never sent), the merchant hears ``order-refund-failed``,
    the cancelled order's money is escalated ``refund-owed``, and a new decision (refund 2) refunds
    it, closing the escalation."""
    paid = await paid_after_cancel(shop)

    async def killed(*args: Any, **kwargs: Any) -> bool:
        raise Crash()

    monkeypatch.setattr(transitions, "mark_started", killed)
    with pytest.raises(Crash):
        await run_refund(shop, await refund_job(shop))
    monkeypatch.undo()
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert attempt["state"] == "Claimed" and refund_calls(shop) == []
    clock.advance((attempt["lease_expires_at"] - clock.now()).total_seconds())
    assert await sweep_leases(REFUND, shop.services.db, clock) == 1
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"]) == ("NotStarted", "lease.lapsed")
    assert f"attempt:{paid['attempt_id']}:order-refund-failed:r1" in await shop.outbox()
    assert await raise_owed(shop.services.db, clock, reminder_interval_s=900) == 1
    again = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert (again.status_code, again.json()["grant"]["refund_number"]) == (200, 2)
    assert await run_refund(shop, await refund_job(shop)) == "Succeeded"
    assert (await order(shop))["state"] == "Refunded"
    [owed] = await shop.services.db.fetch_all("SELECT * FROM payment_escalations WHERE reason = 'refund-owed'")
    assert owed["resolved_at"] is not None
    assert (len(refund_calls(shop)), len(refunds_taken(shop))) == (1, 1)


async def test_a_worker_killed_between_started_and_the_send_is_unknown_until_reconciliation_proves_it(
        shop: Shop, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after Started and the send gate, before the request left: the sweeper records Unknown
    (it may have been sent); the reconciler finds nothing and, only after the send deadline + skew +
    visibility delay, records NotApplied; nothing was ever sent twice, and a new refund follows."""
    await shop.order()
    assert (await shop.pay()).json()["state"] == "Succeeded"
    await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})

    async def killed(*args: Any, **kwargs: Any) -> Any:
        raise Crash()

    monkeypatch.setattr(ProviderCalls, "create", killed)
    with pytest.raises(Crash):
        await run_refund(shop, await refund_job(shop))
    monkeypatch.undo()
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert attempt["state"] == "Started" and refund_calls(shop) == []
    clock.advance((attempt["lease_expires_at"] - clock.now()).total_seconds())
    assert await sweep_leases(REFUND, shop.services.db, clock) == 1
    assert await reconcile_refunds(shop) == 1  # not found, but the cutoff has not passed: still Unknown
    assert (await refund_rows(shop, "payment_refund_attempts"))[0]["state"] == "Unknown"
    clock.advance(timedelta(minutes=10).total_seconds())
    assert await reconcile_refunds(shop) == 1
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"]) == ("NotApplied", "reconciled.not-found")
    assert (await order(shop))["state"] == "Paid"
    assert (await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})).status_code == 200
    assert await run_refund(shop, await refund_job(shop)) == "Succeeded"
    assert (len(refund_calls(shop)), len(refunds_taken(shop))) == (1, 1)
