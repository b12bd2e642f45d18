"""Payout observability (seed 000 section 21, "Observability and Evidence"): real
flows through the executor and the reconciler against CardCo, and a real ``/metrics`` scrape that
must move as the seed's signals say. Counters are read back from PostgreSQL, where every process
adds what it counted (docs/decisions/0041)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime, timedelta

import dramatiq

from gateway.payouts.attempts import EXECUTOR
from gateway.pipeline.kind import Presenter
from gateway.store.db import Connection, Database
from jobs.broker import QUEUE
from tests.integration.broker_support import start_worker
from tests.integration.metrics_support import scrape
from tests.integration.payouts.conftest import World

PAYOUT = {"kind": "payout"}


async def _counted(world: World) -> dict[tuple[str, str | None], float]:
    """The payout event counters in PostgreSQL, by name and state or reason (decisions aside)."""
    return {(r["name"], r["labels"].get("state") or r["labels"].get("reason")): r["value"] for r in await world.rows(
        "SELECT name, labels, value FROM metric_counters WHERE name LIKE 'paygate_payout_%%_total'"
        " AND name <> 'paygate_payout_decisions_total'")}


class BeforeClaim(Database):
    """Runs ``hook`` as each task opens its second transaction (the executor's claim, after the
    validation's read): what another writer does between a worker's validation and its claim."""

    def __init__(self, inner: Database, hook: Callable[[], Awaitable[None]]) -> None:
        super().__init__(inner.pool)
        self.hook = hook
        self.opened: dict[asyncio.Task[object] | None, int] = {}

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        task = asyncio.current_task()
        self.opened[task] = self.opened.get(task, 0) + 1
        if self.opened[task] == 2:
            await self.hook()
        async with super().transaction() as conn:
            yield conn


async def test_a_payout_whose_response_is_lost_shows_in_unknown_by_age_until_reconciliation_settles_it(
        world: World) -> None:
    """Seed 000 section 21: "Unknown attempts by age. The most important payout metric in this
    design" and "Reconciliation outcomes"): provider calls by operation and outcome.
    The histogram is a snapshot: the attempt ages through the buckets, and leaves them when
    reconciliation finds the payout completed."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    assert await world.run(job) == "Unknown"

    seen = await scrape(world.http)
    age = "paygate_payout_unknown_attempt_age_seconds"
    assert seen.value(f"{age}_count", **PAYOUT) == 1
    assert seen.value("paygate_payout_attempts_in_flight", kind="payout", state="Unknown") == 1
    assert seen.value("paygate_payout_executions_total", kind="payout", state="Unknown") == 1
    assert seen.total("paygate_provider_call_seconds_count", kind="payout", operation="create",
                      outcome="timeout") == 1

    world.clock.advance(2 * 3600)  # past the escalation deadline: a person must look
    seen = await scrape(world.http)
    assert seen.value(f"{age}_bucket", kind="payout", le="3600.0") == 0
    assert seen.value(f"{age}_bucket", kind="payout", le="7200.0") == 1
    assert seen.value(f"{age}_sum", **PAYOUT) == 2 * 3600
    assert seen.value("paygate_payout_reconciliation_backlog_seconds", **PAYOUT) > 3600
    # The job's outbox row was never handed to the broker here (no dispatcher runs): it lags.
    assert seen.value("paygate_payout_outbox_pending", **PAYOUT) == 1
    assert seen.value("paygate_payout_outbox_lag_seconds", **PAYOUT) >= 2 * 3600

    assert await world.reconcile() == 1
    seen = await scrape(world.http)
    assert (await world.payout())["state"] == "Paid"
    assert seen.value(f"{age}_count", **PAYOUT) == 0
    assert seen.value("paygate_payout_attempts_in_flight", kind="payout", state="Unknown") == 0
    assert seen.value("paygate_payout_reconciliations_total", kind="payout", outcome="succeeded") == 1
    assert seen.value("paygate_payout_reconciliation_backlog_seconds", **PAYOUT) == 0
    assert seen.total("paygate_provider_call_seconds_count", kind="payout", operation="lookup",
                      outcome="ok") == 1


async def test_two_workers_racing_for_one_grant_count_one_execution_and_one_lost_claim(world: World) -> None:
    """Seed 000 section 10: "The loser of a race sees claim.lost"; section 21: "Claims lost ...
    Expected at a low rate". Both workers pass validation before either claims (two connections
    racing on the grant row); a redelivery afterwards is a duplicate delivery."""
    job = await world.approved()
    both_validated = asyncio.Barrier(2)

    async def wait_for_the_other() -> None:
        await both_validated.wait()

    racing = BeforeClaim(world.services.db, wait_for_the_other)
    results = await asyncio.gather(world.executor(db=racing).run(job), world.executor(db=racing).run(job))
    assert sorted(results) == ["Started", "claim.lost"]
    assert await world.run(job) == "grant.consumed"

    seen = await scrape(world.http)
    assert seen.value("paygate_payout_claims_lost_total", **PAYOUT) == 1
    assert seen.value("paygate_payout_executions_total", kind="payout", state="Started") == 1
    assert seen.value("paygate_payout_duplicate_deliveries_total", **PAYOUT) == 1
    assert seen.value("paygate_payout_validation_refusals_total", kind="payout", reason="grant.consumed") == 1
    assert seen.value("paygate_payout_context_fence_rollbacks_total", **PAYOUT) == 0
    assert len(world.submits()) == 1


async def test_a_change_between_validation_and_claim_counts_a_context_fence_rollback(world: World) -> None:
    """Seed 000 section 10, the context fence; section 21: "context-fence rollbacks ... a high rate
    points at context that changes faster than the batch runs"."""
    job = await world.approved()

    async def suspend_beneficiary() -> None:
        await world.beneficiary(status="Suspended")

    assert await world.executor(db=BeforeClaim(world.services.db, suspend_beneficiary)).run(job) == \
        "claim.context-changed"
    seen = await scrape(world.http)
    assert seen.value("paygate_payout_context_fence_rollbacks_total", **PAYOUT) == 1
    assert seen.value("paygate_payout_claims_lost_total", **PAYOUT) == 0
    assert world.submits() == []


async def test_refused_and_postponed_deliveries_are_counted_by_reason_code(world: World) -> None:
    """Seed 000 section 21: "Validation refusals by reason code. A spike in grant.expired points at
    queue backlog. A spike in binding.mismatch or presenter.not-audience is a security signal";
    the label is the code, never the payout or grant id the message carried."""
    await world.create("PAY-4000")
    decision = await world.submit("PAY-4000")
    later = await world.job(decision["grant"]["grant_id"])
    postponed = await world.run(later)
    assert getattr(postponed, "code", None) == "grant.not-yet-valid"
    assert await world.run(replace(later, payout_id="PAY-3107")) == "binding.mismatch"
    assert await world.run(later, Presenter("svc-reporting", frozenset({"reporting"}))) == "presenter.not-audience"
    await world.tenant(payouts_suspended=True)
    world.clock.set(datetime.fromisoformat(decision["grant"]["not_before"].replace("Z", "+00:00")))
    assert await world.run(later) == "policy.no-longer-allows"
    world.clock.advance(world.settings.payout_grant_window_s)
    assert await world.run(later, EXECUTOR) == "grant.expired"

    seen = await scrape(world.http)
    refusals = {s["reason"]: seen.value("paygate_payout_validation_refusals_total", **s)
                for s in seen.series("paygate_payout_validation_refusals_total")}
    assert refusals == {"binding.mismatch": 1, "presenter.not-audience": 1, "policy.no-longer-allows": 1,
                        "grant.expired": 1}
    assert seen.value("paygate_payout_deliveries_postponed_total", kind="payout", reason="grant.not-yet-valid") == 1
    assert all(label["kind"] == "payout" for label in seen.series("paygate_payout_validation_refusals_total"))


async def test_decisions_are_counted_by_outcome_and_reason_in_their_own_transaction(world: World) -> None:
    """Decisions by outcome and reason (seed 000 section 5). A decision is a
    row: the database counts it as it is written, so the count cannot differ from the decisions."""
    await world.create("PAY-1")
    await world.submit("PAY-1")
    await world.tenant(payouts_suspended=True)
    await world.create("PAY-2")
    assert (await world.submit("PAY-2"))["outcome"] == "Denied"
    seen = await scrape(world.http)
    assert seen.value("paygate_payout_decisions_total", kind="payout", outcome="Allowed",
                      reason="payout.allowed") == 1
    assert seen.value("paygate_payout_decisions_total", kind="payout", outcome="Denied",
                      reason="tenant.payouts-suspended") == 1
    [counted] = await world.rows("SELECT sum(value) AS n FROM metric_counters"
                                 " WHERE name = 'paygate_payout_decisions_total'")
    [decided] = await world.rows("SELECT count(*) AS n FROM payout_decisions")
    assert counted["n"] == decided["n"] == 2


async def test_every_label_value_is_a_kind_state_or_code_never_an_id(world: World) -> None:
    """Bounded label sets (never an id, account token or free text as a label
    value): after a payout ran, no label value of the scrape names the payout, grant, attempt,
    provider account or destination token. One exception, docs/decisions/0063: the configured
    provider account is the value of the ``account`` label (configuration, a bounded set), and
    only there."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    await world.run(job)
    world.clock.advance(timedelta(hours=2).total_seconds())
    await world.reconcile()
    [attempt] = (await world.payout())["attempts"]
    secrets = {job.payout_id, job.grant_id, job.correlation_id, attempt["attempt_id"], attempt["client_reference"],
               world.settings.provider_accounts[0].id, "dst_tok_secret_77"}
    seen = await scrape(world.http)
    values = {value for _, labels in seen.values for name, value in labels if name != "account"}
    assert not {v for v in values if any(s in v for s in secrets)}
    accounts = {value for _, labels in seen.values for name, value in labels if name == "account"}
    assert accounts == {account.id for account in world.settings.provider_accounts}


async def test_real_workers_add_what_each_delivery_counted_to_the_fleet_without_a_scrape(
        world: World, jobs_runtime: dramatiq.Broker) -> None:
    """docs/decisions/0041: a worker adds a message's counts to the sums in PostgreSQL when the
    message ends. The relay publishes one job three times (seed 000 section 7); the real worker
    runs them; the counts are in the table before any process scrapes."""
    from jobs.payouts import publish_payout_job

    await world.approved()
    [row] = await world.rows("SELECT payload FROM outbox_messages WHERE kind = 'payout-job'")
    for _ in range(3):
        publish_payout_job(row["payload"], world.clock)
    worker = start_worker(jobs_runtime)
    try:
        await asyncio.to_thread(jobs_runtime.join, QUEUE, timeout=20_000)
        await asyncio.to_thread(worker.join)
        counted = await _counted(world)  # the worker still runs: nothing has flushed at its shutdown
    finally:
        worker.stop()
    assert counted.pop(("paygate_payout_executions_total", "Started")) == 1
    lost = counted.pop(("paygate_payout_claims_lost_total", None), 0)
    consumed = counted.pop(("paygate_payout_validation_refusals_total", "grant.consumed"), 0)
    assert lost + consumed == 2 and counted.pop(("paygate_payout_duplicate_deliveries_total", None), 0) == consumed
    assert counted == {}
    assert len(world.submits()) == 1
