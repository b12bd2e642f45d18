"""The recovery loop's stated limits and repository guarantees (seed 004 test matrix lines that
name a limit rather than a branch)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.domain.attempts import Evidence
from gateway.payments.attempts import Attempts
from gateway.payments.leases import Lease
from gateway.payments.sends import PaymentSends
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import WorkerFactory
from tests.integration.recovery.test_recovery_loop import row, unknown_payment


async def test_a_worker_that_pauses_after_its_final_check_still_sends_and_the_send_is_recorded_and_reconciled(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 matrix: "A recovery worker that pauses after its final check documents the residual
    limit: local checks cannot stop that send. Assert only what the design guarantees, for example
    that the send is recorded and later reconciled"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    clock.advance(23 * 3600 - 30)  # 30 s before the escalation deadline
    real = PaymentSends.create_payment

    async def paused_then_sent(self: PaymentSends, *args: Any, **kwargs: Any) -> Evidence:
        clock.advance(3600)  # the worker wakes long after its deadline and its lease, and sends anyway
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(PaymentSends, "create_payment", paused_then_sent)
    assert (await worker().sweep()).outcomes == {"resent:succeeded->Succeeded": 1}
    assert (await shop.events(attempt["attempt_id"])).count("send_result") == 2, "the late send is recorded"
    assert len(shop.ledger()) == 1, "and under the attempt's key it took effect once"
    assert (await row(shop, attempt["attempt_id"]))["state"] == "Succeeded"


async def test_a_send_intent_after_the_escalation_deadline_is_refused(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "A send_intent commit attempted after the escalation deadline is refused, with
    FakeTimeProvider moving the endpoint's first_sent_at, the deadline, and the recovery loop's :now
    together"."""
    attempt = await unknown_payment(shop, action="timeout_before_effect")
    stored = await row(shop, attempt["attempt_id"])
    assert stored["escalation_deadline"] == stored["first_sent_at"] + timedelta(hours=24) - timedelta(hours=1)
    clock.set(stored["escalation_deadline"])  # the one clock moves first_sent_at, deadline and :now together
    recovery = worker()
    claimed = await recovery._leases.claim(attempt["attempt_id"], recovery.owner)  # noqa: SLF001
    assert claimed is not None
    lease = Lease(recovery.owner, claimed["lease_token"], claimed["lease_expires_at"], 60, 900)
    observation = ("lookup", {"outcome": "not-found"})
    assert await recovery._leases.commit_intent(claimed, lease, observation) is False  # noqa: SLF001
    assert (await shop.events(attempt["attempt_id"])).count("send_intent") == 1


async def test_the_repository_commits_a_send_intent_only_with_started_or_an_owned_lease(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "The repository cannot commit a send_intent for an attempt without the
    transition to Started or a recovery owner's lease on a sendable attempt; this is a
    repository-level test, since no table constraint spans the two tables"."""
    await shop.order()
    attempts: Attempts = shop.services.attempts
    fresh = await attempts.get_or_create_live("ORD-5521", "cus_1")
    started = await attempts.mark_started(fresh)
    assert started is not None
    assert await attempts.mark_started(fresh) is None, "no second first-send intent without the transition"
    clock.advance(60)
    recovery = worker()
    claimed = await recovery._leases.claim(fresh["attempt_id"], recovery.owner)  # noqa: SLF001
    assert claimed is not None
    observation = ("lookup", {"outcome": "not-found"})
    stranger = Lease("recovery-stranger", claimed["lease_token"], claimed["lease_expires_at"], 60, 900)
    forged = Lease(recovery.owner, fresh["attempt_id"], claimed["lease_expires_at"], 60, 900)
    for lease in (stranger, forged):
        assert await recovery._leases.commit_intent(claimed, lease, observation) is False  # noqa: SLF001
    async with shop.services.db.transaction() as conn:  # the attempt resolved meanwhile: no longer sendable
        await conn.execute("UPDATE payment_attempts SET state = 'Failed', outcome_reason = 'card_declined'")
    owned = Lease(recovery.owner, claimed["lease_token"], claimed["lease_expires_at"], 60, 900)
    assert await recovery._leases.commit_intent(claimed, owned, observation) is False  # noqa: SLF001
    assert (await shop.events(fresh["attempt_id"])).count("send_intent") == 1


async def test_an_outcome_that_loses_to_unknown_is_reapplied_and_one_that_loses_to_a_final_state_returns_it(
        shop: Shop) -> None:
    """Seed 004 matrix: "An outcome write that loses a race to a Started or Unknown winner, such as a
    provider-status update or recovery marking the attempt Unknown, is reapplied against the new
    version, so a Succeeded outcome replaces Unknown; one that loses to Succeeded, Failed, or
    NotApplied returns that outcome" (docs/decisions/0001: the writer decides under the lock)."""
    await shop.order()
    attempts: Attempts = shop.services.attempts
    attempt = await attempts.mark_started(await attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    unknown = Evidence(finding="unknown", provider_account=shop.account, reason="provider.no-response.caller")
    await attempts.apply_evidence(attempt["attempt_id"], unknown, actor="recovery-1", kind="lookup")
    success = Evidence(finding="succeeded", provider_account=shop.account, provider_id="pay_1",
                       amount_minor=4250, currency="EUR")
    won = await attempts.record_response(attempt["attempt_id"], success, actor="endpoint")
    assert (won["state"], won["version"]) == ("Succeeded", attempt["version"] + 2)
    declined = Evidence(finding="failed", provider_account=shop.account, reason="card_declined")
    lost = await attempts.record_response(attempt["attempt_id"], declined, actor="endpoint")
    assert lost["state"] == "Succeeded", "the final winner is returned, not overwritten"


async def test_a_constraint_failure_while_recording_is_not_retried_and_takes_the_unconfirmed_path(
        shop: Shop, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004 matrix: "A constraint failure while recording an outcome is not retried as a
    concurrency conflict; it takes the unconfirmed-write path"."""
    await shop.order()
    with psycopg.connect(database_url, autocommit=True) as conn:  # a rule the outcome write breaks
        conn.execute("ALTER TABLE orders ADD CONSTRAINT ck_test_never_paid CHECK (state <> 'Paid')")
    calls = 0
    real = Attempts._write  # every way evidence is written goes through it

    async def counted(self: Attempts, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(Attempts, "_write", counted)
    response = await shop.pay()
    assert calls == 1, "a constraint failure is not retried"
    assert (response.status_code, response.json()["state"]) == (202, "Started"), "the durable status"
    [attempt] = await shop.attempts()
    assert await shop.events(attempt["attempt_id"]) == ["send_intent"]
    assert len(shop.ledger()) == 1, "the provider took the payment; recovery will find it"
