"""One paused account never stalls the others' reconciliation, and every attempt is escalated at
its deadline without a lookup. Seed 004, "The Recovery Loop": on a 429 "pause
the sweep ... other providers and accounts continue"; seed 000, "Reconcile Before Any New
Attempt": every attempt has an escalation deadline, past which it is a person's question."""

from __future__ import annotations

from typing import Any

from gateway.clock import ManualClock
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT
from tests.integration.refunds.conftest import Shop, reconcile_refunds, refund_job, refund_lookups, run_refund

LOST = {"operation": "refund_payment", "action": "drop_response", "times": 0}
BACKLOG = 60  # more than the reconciler's batch of 50


async def _unknown_refund(shop: Shop, clock: ManualClock, order_id: str, account: str) -> None:
    """A paid order on ``account`` whose merchant refund reached CardCo and lost its answer."""
    await shop.order(order_id, account=account)
    assert (await shop.pay(order_id)).json()["state"] == "Succeeded"
    requested = await shop.http.post(f"/v1/orders/{order_id}/refund", headers=shop.merchant, json={})
    assert requested.status_code == 200, requested.text
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    clock.advance(1)  # each claimed a second after the last: their deadlines follow one another


async def _attempts(shop: Shop, account: str) -> list[dict[str, Any]]:
    return await shop.services.db.fetch_all(
        "SELECT * FROM payment_refund_attempts WHERE provider_account = %(a)s ORDER BY claimed_at", {"a": account})


async def _deadline_escalations(shop: Shop) -> list[str]:
    rows = await shop.services.db.fetch_all(
        "SELECT escalation_key FROM payment_escalations WHERE reason = 'payment-refund-deadline' "
        "ORDER BY escalation_id")
    return [row["escalation_key"] for row in rows]


def _key(attempt: dict[str, Any]) -> str:
    return f"payment-refund-attempt:{attempt['attempt_id']}:deadline"


async def test_a_rate_limited_account_stalls_no_other_and_its_attempts_are_escalated_without_a_lookup(
        shop: Shop, clock: ManualClock) -> None:
    """60 refunds Unknown on the test account, claimed before one Unknown on the live account.
    CardCo answers the test account's first lookup 429 for two hours: the account pauses, and the
    same round still looks the live refund up and resolves it. No lookup goes to the paused account
    again; each of its 60 attempts is escalated ``deadline`` once its stamped deadline passes, not
    before, and the attempt rows stay as they were. A deadline is escalated once: an operator who
    resolves the episode is not alerted again for it (docs/decisions/0058)."""
    await shop.faults(LOST)
    for n in range(BACKLOG):
        await _unknown_refund(shop, clock, f"ORD-T{n:02}", TEST_ACCOUNT)
    await _unknown_refund(shop, clock, "ORD-LIVE", LIVE_ACCOUNT)
    await shop.faults({"operation": "list_refunds", "action": "rate_limit", "client_reference": "ORD-T00-r1",
                       "times": 0, "retry_after_s": 7200})
    clock.advance(60)  # every first check is due

    await reconcile_refunds(shop)
    [live] = await _attempts(shop, LIVE_ACCOUNT)
    assert (live["state"], live["outcome_reason"]) == ("Succeeded", "provider.refunded")
    assert (await shop.http.get("/v1/orders/ORD-LIVE", headers=shop.merchant)).json()["state"] == "Refunded"
    looked_up = sorted((r["headers"]["cardco-account"], r["path"]) for r in refund_lookups(shop))
    assert looked_up == [("cardco:acct_store:live", "/v1/refunds?client_reference=ORD-LIVE-r1"),
                         ("cardco:acct_store:test", "/v1/refunds?client_reference=ORD-T00-r1")]

    waiting = await _attempts(shop, TEST_ACCOUNT)
    assert [a["state"] for a in waiting] == ["Unknown"] * BACKLOG
    middle = waiting[BACKLOG // 2 - 1]["escalation_deadline"]
    clock.advance((middle - clock.now()).total_seconds())
    await reconcile_refunds(shop)
    assert await _deadline_escalations(shop) == [_key(a) for a in waiting[:BACKLOG // 2]]

    clock.advance((waiting[-1]["escalation_deadline"] - clock.now()).total_seconds())
    await reconcile_refunds(shop)
    clock.advance(60)
    await reconcile_refunds(shop)
    assert await _deadline_escalations(shop) == [_key(a) for a in waiting]  # each once
    assert len(refund_lookups(shop)) == 2, "no lookup while the account is paused"
    assert await _attempts(shop, TEST_ACCOUNT) == waiting  # escalating never changes the attempt row

    operator = {"Authorization": f"Bearer {await shop.services.tokens.create('operator', 'op_1')}"}
    [first] = await shop.services.db.fetch_all(
        "SELECT escalation_id FROM payment_escalations WHERE escalation_key = %(k)s", {"k": _key(waiting[0])})
    resolved = await shop.http.post(f"/v1/ops/escalations/{first['escalation_id']}/resolve", headers=operator,
                                    json={"note": "asked CardCo by phone"})
    assert resolved.status_code == 200, resolved.text
    clock.advance(60)
    await reconcile_refunds(shop)
    assert await _deadline_escalations(shop) == [_key(a) for a in waiting], "never a second one for a deadline"
