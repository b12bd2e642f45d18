"""Every send, resend and lookup of a payout or recall attempt uses the provider
account STORED on the attempt (docs/decisions/0007; seed 000 "Reconcile Before Any New Attempt":
the lookup asks where the attempt was sent; seed 004: the payment client never falls back to a
default). Reordering the configured accounts between the send and the reconciliation must not
redirect the lookup; removing the attempt's account raises ``account-not-configured`` and never
concludes NotApplied (which would permit a reauthorized second payout)."""

from __future__ import annotations

from typing import Any

from gateway.payouts.attempts import PAYOUT
from gateway.payouts.recalls import RECALL
from gateway.pipeline.accounts import NOT_CONFIGURED
from gateway.pipeline.kind import AttemptKind
from gateway.pipeline.reconciler import Reconciler
from gateway.settings import Settings
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT
from tests.integration.payouts.conftest import World
from tests.integration.payouts.recall_helpers import (
    paid,
    recall_calls,
    recall_job,
    recall_lookups,
    run_recall,
)

PAST_CUTOFF_S = 3600  # past the send deadline, CardCo's skew and visibility delay: "not found" would decide


def _accounts(world: World, *ids: str) -> Settings:
    by_id = {account.id: account for account in world.settings.provider_accounts}
    return world.settings.model_copy(update={"provider_accounts": [by_id[i] for i in ids]})


async def _reconcile(world: World, kind: AttemptKind, settings: Settings) -> int:
    return await Reconciler(kind, world.services.db, world.clock, settings, world.services.http).run_once()


def _asked(requests: list[dict[str, Any]]) -> set[str]:
    return {r["headers"]["cardco-account"] for r in requests}


async def _open_escalations(world: World) -> list[dict[str, Any]]:
    return await world.rows("SELECT escalation_key, reason FROM payment_escalations WHERE resolved_at IS NULL "
                            "ORDER BY escalation_id")


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
    assert await _open_escalations(world) == [  # and, an hour after its claim, its deadline
        {"escalation_key": f"payout-attempt:{attempt['attempt_id']}:deadline", "reason": "payout-deadline"},
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
    assert [e["reason"] for e in await _open_escalations(world)] == [
        "payout-recall-deadline", "payout-recall-account-not-configured"]  # its deadline passed too


async def _recall_with(world: World, settings: Settings) -> Any:
    """Take the published recall policy's decision on the paid PAY-3107 and run its job with ``settings``."""
    decision = (await world.post("/v1/payouts/PAY-3107/recall")).json()
    return await run_recall(world, await recall_job(world, decision["grant"]["grant_id"]), settings)


async def test_a_recall_goes_to_the_account_the_payout_was_paid_on(world: World) -> None:
    """Seed 000 section 17 (the recall links to the paid payout) with docs/decisions/0007: the payout was
    paid on the test account; the accounts are then reordered. The recall is claimed on, and sent
    to, the account that holds the provider payout id, which accepts it (before: it was claimed on
    the new first account, which knows no such payout)."""
    await paid(world)
    reordered = _accounts(world, LIVE_ACCOUNT, TEST_ACCOUNT)
    assert await _recall_with(world, reordered) == "Started"
    assert _asked(recall_calls(world)) == {TEST_ACCOUNT}
    world.clock.advance(60)
    assert await _reconcile(world, RECALL, reordered) == 1
    [attempt] = await world.rows("SELECT provider_account, state FROM payout_recall_attempts")
    assert (attempt["provider_account"], attempt["state"]) == (TEST_ACCOUNT, "Succeeded")


async def test_a_recall_of_a_payout_paid_on_a_removed_account_claims_nothing(world: World) -> None:
    """The paid payout's account is no longer configured: the recall claims no attempt and calls
    no provider (asking another account would name a payout it never made); the grant stays unused
    and lapses as any unused grant does."""
    await paid(world)
    assert await _recall_with(world, _accounts(world, LIVE_ACCOUNT)) == NOT_CONFIGURED
    assert await world.rows("SELECT attempt_id FROM payout_recall_attempts") == []
    assert recall_calls(world) == []
    [grant] = await world.rows("SELECT state FROM payout_recall_grants")
    assert grant["state"] == "Issued"
