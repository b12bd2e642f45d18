"""Shared steps of the payout recall tests (docs/decisions/0015; seed 000 section 17)."""

from __future__ import annotations

from typing import Any

from gateway.payouts.recalls import RECALL, RECALL_EXECUTOR
from gateway.payouts.validation import PayoutJob
from gateway.pipeline.executor import Executor
from gateway.pipeline.reconciler import Reconciler
from gateway.settings import Settings
from tests.integration.payouts.conftest import World

RECALL_POLICY = "payout-recall-policy/2026.11"


async def paid(world: World, payout_id: str = "PAY-3107") -> dict[str, Any]:
    """A payout taken to Paid through the real pipeline, and the recall policy published."""
    await world.put("/v1/policy/payout.recall", {"version": RECALL_POLICY})
    assert await world.run(await world.approved(payout_id)) == "Started"
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout(payout_id)
    assert payout["state"] == "Paid"
    return payout


async def recall_job(world: World, grant_id: str) -> PayoutJob:
    row = await world.services.db.fetch_one(
        "SELECT payload FROM outbox_messages WHERE kind = 'payout-recall-job' AND payload->>'grant_id' = %(g)s",
        {"g": grant_id})
    assert row is not None
    payload = row["payload"]
    return PayoutJob(payload["payout_id"], payload["grant_id"], payload["correlation_id"])


async def run_recall(world: World, job: PayoutJob, settings: Settings | None = None) -> Any:
    return await Executor(RECALL, world.services.db, world.clock, settings or world.settings, RECALL_EXECUTOR,
                          world.services.http).run(job)


async def reconcile_recalls(world: World) -> int:
    return await Reconciler(RECALL, world.services.db, world.clock, world.settings, world.services.http).run_once()


def recall_calls(world: World) -> list[dict[str, Any]]:
    return [r for r in world.cardco.store.requests
            if r["method"] == "POST" and r["path"].startswith("/v1/payouts/") and r["path"].endswith("/recalls")]


def recall_lookups(world: World) -> list[dict[str, Any]]:
    return [r for r in world.cardco.store.requests
            if r["method"] == "GET" and r["path"].startswith("/v1/payout_recalls")]


def original(payout: dict[str, Any]) -> tuple[Any, ...]:
    """The payout's own records, which a recall must leave exactly as they were."""
    return (payout["state"], payout["version"], payout["decisions"], payout["grants"], payout["attempts"])


async def recall_and_payout_unknown(world: World) -> None:
    """PAY-3107 Paid with its recall Unknown (section 17: "A recall that fails or becomes Unknown is
    reconciled the same way"), then PAY-LOST Unknown (Trace G: the response never arrived)."""
    await paid(world, "PAY-3107")
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Unknown"
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved("PAY-LOST")) == "Unknown"
