"""Provider-side reconciliation of the attempt pipeline's kinds (docs/decisions/0071): a payout
attempt left Unknown by a lost answer is resolved by a run through the reconciler's own rule (the
record verified like a lookup's: reference, amount, currency, destination digest), with no send;
run again, the same payout is matched; a payout whose provider record was tampered with is a
disagreement and the Paid payout is never overwritten (seed 000, "Reconcile Before Any New
Attempt": the reconciler only reads)."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.reconciliation.runs import Runs
from provider_fake.app import create_app
from tests.integration.payouts.conftest import World, world
from tests.integration.reconciliation.conftest import window

__all__ = ["world"]


def runs_of(world: World) -> Runs:
    services = world.services
    return Runs(services.db, world.clock, services.settings, services.http)


async def run_window(world: World, start: Any) -> dict[str, Any]:
    world.clock.advance(120)
    runs = runs_of(world)
    account = world.settings.provider_accounts[0].id
    run = await runs.start(account, *window(start, world.clock.now()), "test")
    assert await runs.execute(run["run_id"]) == "finished"
    done = await runs.get(run["run_id"])
    assert done is not None
    return done


async def test_an_unknown_payout_is_resolved_by_a_run_and_matched_by_the_next(world: World) -> None:
    start = world.clock.now()
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved()) == "Unknown"
    await world.faults()
    first = await run_window(world, start)
    assert (first["evidence"], first["orphan"], first["disagreement"], first["missing"]) == (1, 0, 0, 0)
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert len(world.submits()) == 1, "one send"
    assert [r["path"].split("?")[1].split("=")[0] for r in world.lookups()] == ["created_gte"], "the run only listed"
    second = await run_window(world, start)
    assert (second["matched"], second["evidence"], second["disagreement"]) == (1, 0, 0)


async def test_a_tampered_payout_is_a_disagreement_and_the_paid_payout_stands(world: World) -> None:
    start = world.clock.now()
    assert await world.run(await world.approved()) == "Started"  # CardCo accepted: processing
    world.clock.advance(60)
    await world.reconcile()
    payout = await world.payout()
    assert payout["state"] == "Paid"
    provider_id = payout["attempts"][0]["provider_payout_id"]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(world.cardco)),
                                 base_url="http://cardco.test") as control:
        (await control.post(f"/_control/objects/{provider_id}/amend", json={"amount_minor": 1})).raise_for_status()
    run = await run_window(world, start)
    assert (run["disagreement"], run["matched"]) == (1, 0)
    [escalation] = await world.rows("SELECT reason, details FROM payment_escalations WHERE reason LIKE 'provider-%%'")
    assert (escalation["reason"], escalation["details"]["provider_object_id"], escalation["details"]["kind"]) == (
        "provider-disagreement", provider_id, "payout")
    assert (await world.payout())["state"] == "Paid"
