"""Seed 000, section 12 ("Evidence records identifiers, amounts, currency and provider reason
codes. It does not record destination tokens ... provider credentials") and Additional: "no
grant, message, or evidence record contains a destination token or provider credential"; and
real Dramatiq delivery for the job, its redelivery and a duplicate (sections 7 and 13)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import dramatiq
import pytest
import structlog

from gateway.logs import configure_logging
from tests.integration.payouts.conftest import TOKEN, World
from tests.integration.test_jobs import run_worker_until_idle

API_KEY = "ck_test_key"


async def test_no_token_or_credential_reaches_grants_messages_evidence_or_logs(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "debug")
    try:
        await world.faults({"operation": "create_payout", "action": "drop_response"})
        job = await world.approved()
        await world.run(job)
        world.clock.advance(60)
        await world.reconcile()
        document = json.dumps(await world.payout())
    finally:
        structlog.reset_defaults()
    tables = ["payout_grants", "payout_decisions", "payout_attempts", "payout_history", "outbox_messages",
              "payment_escalations", "payouts", "tenants", "beneficiaries"]
    dumped = {table: json.dumps(await world.rows(f"SELECT * FROM {table}"), default=str) for table in tables}
    logs = capsys.readouterr()
    for secret in (TOKEN, API_KEY):
        for table, text in dumped.items():
            assert secret not in text, table
        assert secret not in document
        assert secret not in logs.out + logs.err
    assert "payout_decided" in logs.err and "PAY-3107" in logs.err


async def test_a_published_job_redelivered_and_duplicated_on_the_real_broker_pays_once(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """Section 7: "The relay may publish the message more than once, the broker may deliver it more
    than once ... None of that changes what the worker is allowed to do"; matrix: "Redelivery after
    the claim -> duplicate delivery, 0 additional calls"."""
    from jobs.payouts import publish_payout_job

    job = await world.approved()
    [row] = await world.rows("SELECT payload FROM outbox_messages WHERE kind = 'payout-job'")
    assert set(row["payload"]) == {"payout_id", "grant_id", "correlation_id", "deliver_at", "dedup_key", "kind"}
    for _ in range(3):  # the relay publishes three times
        publish_payout_job(row["payload"], world.clock)
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert len(world.submits()) == 1
    deliveries = [e["detail"]["code"] for e in await world.history() if e["kind"] == "delivery"]
    assert len(deliveries) == 2 and set(deliveries) <= {"claim.lost", "grant.consumed"}
    assert (await world.payout())["attempts"][0]["grant_id"] == job.grant_id


async def test_the_outbox_dispatcher_publishes_the_job_and_a_real_worker_pays_once(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """Section 7: the decision's outbox row is what publishes the job; the dispatcher hands
    ``payout-job`` rows to the job system instead of a sink, and the worker pays once."""
    from jobs.outbox import dispatch_outbox

    job = await world.approved()
    [row] = await world.rows("SELECT payload FROM outbox_messages WHERE kind = 'payout-job'")
    world.clock.set(datetime.fromisoformat(row["payload"]["deliver_at"]))
    dispatch_outbox.send()
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    [dispatched] = await world.rows("SELECT dispatched_at, delivery_attempts FROM outbox_messages"
                                    " WHERE kind = 'payout-job'")
    assert dispatched["dispatched_at"] is not None
    assert len(world.submits()) == 1
    assert (await world.payout())["attempts"][0]["grant_id"] == job.grant_id


async def test_the_outbox_publishes_a_recall_job_and_real_workers_recall_once_and_reconcile(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """docs/decisions/0015 on the real broker. Seed 000 section 7: the decision's outbox row
    publishes the job, "the relay may publish the message more than once, the broker may deliver it
    more than once ... None of that changes what the worker is allowed to do"; section 17: "A
    recall that fails or becomes Unknown is reconciled the same way" (the reconcile actor)."""
    from jobs.outbox import dispatch_outbox
    from jobs.payouts import publish_payout_recall_job, reconcile_payouts, sweep_payouts
    from tests.integration.payouts.recall_helpers import paid, recall_calls, recall_lookups

    await paid(world)
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    [row] = await world.rows("SELECT payload FROM outbox_messages WHERE kind = 'payout-recall-job'")
    assert set(row["payload"]) == {"payout_id", "grant_id", "correlation_id", "deliver_at", "dedup_key", "kind"}
    assert row["payload"]["grant_id"] == decision["grant"]["grant_id"]
    dispatch_outbox.send()
    publish_payout_recall_job(row["payload"], world.clock)  # and the relay publishes it twice more
    publish_payout_recall_job(row["payload"], world.clock)
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    [dispatched] = await world.rows("SELECT dispatched_at FROM outbox_messages WHERE kind = 'payout-recall-job'")
    assert dispatched["dispatched_at"] is not None
    assert len(recall_calls(world)) == 1
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert (attempt["state"], attempt["grant_id"]) == ("Unknown", decision["grant"]["grant_id"])
    world.clock.advance(60)
    sweep_payouts.send()
    reconcile_payouts.send()
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert attempt["state"] == "Succeeded"
    assert (len(recall_calls(world)), len(recall_lookups(world))) == (1, 1)
