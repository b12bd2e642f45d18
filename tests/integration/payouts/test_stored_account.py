"""Issue 11 item 2: every send, resend and lookup of a payout or recall attempt uses the provider
account STORED on the attempt (docs/decisions/0007; seed 000 "Reconcile Before Any New Attempt":
the lookup asks where the attempt was sent; seed 004: the payment client never falls back to a
default). Reordering the configured accounts between the send and the reconciliation must not
redirect the lookup; removing the attempt's account raises ``account-not-configured`` and never
concludes NotApplied (which would permit a reauthorized second payout)."""

from __future__ import annotations

from typing import Any

from gateway.payouts.attempts import PAYOUT
from gateway.payouts.recalls import RECALL
from gateway.pipeline.kind import AttemptKind
from gateway.pipeline.reconciler import Reconciler
from gateway.settings import Settings
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import paid, recall_job, recall_lookups, run_recall

PAST_CUTOFF_S = 3600  # past the send deadline, CardCo's skew and visibility delay: "not found" would decide


def _accounts(world: World, *ids: str) -> Settings:
    by_id = {account.id: account for account in world.settings.provider_accounts}
    return world.settings.model_copy(update={"provider_accounts": [by_id[i] for i in ids]})


async def _reconcile(world: World, kind: AttemptKind, settings: Settings) -> int:
    return await Reconciler(kind, world.services.db, world.clock, settings, world.services.http).run_once()


def _asked(requests: list[dict[str, Any]]) -> set[str]:
    return {r["headers"]["cardco-account"] for r in requests}


async def _open_escalations(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason FROM payment_escalations WHERE resolved_at IS NULL")


async def test_reordered_accounts_do_not_redirect_a_payout_lookup(world: World) -> None:
    """Sent on the first configured account; the accounts are reordered; the reconciler still asks
    that account, finds the payout and resolves Succeeded (before: it asked the new first account,
    found nothing and, past the cutoff, concluded NotApplied)."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved()) == "Unknown"
    assert (await world.rows("SELECT provider_account FROM payout_attempts"))[0]["provider_account"] == TEST_ACCOUNT
    world.clock.advance(PAST_CUTOFF_S)
    assert await _reconcile(world, PAYOUT, _accounts(world, LIVE_ACCOUNT, TEST_ACCOUNT)) == 1
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Paid", "Succeeded")
    assert _asked(world.lookups()) == {TEST_ACCOUNT}


async def test_a_removed_account_escalates_and_never_concludes_not_applied(world: World) -> None:
    """The attempt's account is no longer configured: ``payout-attempt:<id>:account-not-configured``,
    no lookup on any other account, the attempt stays Unknown and the payout's reservation held;
    once the account is configured again, the lookup settles it and closes the escalation."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    assert await world.run(await world.approved()) == "Unknown"
    [attempt] = await world.rows("SELECT attempt_id FROM payout_attempts")
    world.clock.advance(PAST_CUTOFF_S)
    assert await _reconcile(world, PAYOUT, _accounts(world, LIVE_ACCOUNT)) == 1
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["state"]) == ("Unknown", "Unknown")
    assert world.lookups() == []
    assert await _open_escalations(world) == [
        {"escalation_key": f"payout-attempt:{attempt['attempt_id']}:account-not-configured",
         "reason": "payout-account-not-configured"}]
    world.clock.advance(PAST_CUTOFF_S)
    assert await _reconcile(world, PAYOUT, _accounts(world, LIVE_ACCOUNT, TEST_ACCOUNT)) == 1
    assert (await world.payout())["state"] == "Paid"
    assert await _open_escalations(world) == []


async def test_reordered_accounts_do_not_redirect_a_recall_lookup(world: World) -> None:
    """The same for the recall kind (one pipeline, both fixed): the recall lookup asks the recall
    attempt's own account and finds the recall."""
    await paid(world)
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Unknown"
    world.clock.advance(PAST_CUTOFF_S)
    assert await _reconcile(world, RECALL, _accounts(world, LIVE_ACCOUNT, TEST_ACCOUNT)) == 1
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert attempt["state"] == "Succeeded"
    assert _asked(recall_lookups(world)) == {TEST_ACCOUNT}


async def test_a_removed_account_never_concludes_a_recall_not_applied(world: World) -> None:
    await paid(world)
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    await world.faults({"operation": "create_recall", "action": "drop_response"})
    assert await run_recall(world, await recall_job(world, decision["grant"]["grant_id"])) == "Unknown"
    world.clock.advance(PAST_CUTOFF_S)
    assert await _reconcile(world, RECALL, _accounts(world, LIVE_ACCOUNT)) == 1
    [attempt] = (await world.payout())["recalls"]["attempts"]
    assert attempt["state"] == "Unknown"
    assert recall_lookups(world) == []
    assert [e["reason"] for e in await _open_escalations(world)] == ["payout-recall-account-not-configured"]
