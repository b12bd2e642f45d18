"""The order follows its refund (docs/decisions/0020), in the transaction that
resolves the refund attempt: ``gateway.domain.refunds.after_refund`` says what changes; this writes
it. The merchant hears about it through effect-keyed outbox rows ordered behind the paid payment's
own confirmation (ordering key ``attempt:<paid attempt>``, seed 004 "Downstream Work": "A refund
therefore cannot overtake its confirmation"); the refund that succeeds closes the order's
``order:<id>:refund-owed`` escalation (raised by :func:`raise_owed`).

:func:`raise_owed` is the clock-driven check: every ``PaidAfterCancel`` order with no refund under
way (no Issued grant inside its window, no attempt Claimed, Started, Unknown or Succeeded; the
question is asked in SQL, refunds.sql ``owed_refunds``) gets one open ``refund-owed`` episode,
whatever left it so (a decision that was not Allowed, a refund that ended without effect, a grant
that lapsed because its job was lost): a person's question."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.clock import Clock
from gateway.domain import refunds
from gateway.domain.outcomes import AttemptState
from gateway.escalations.store import raise_escalation, resolve_by_key
from gateway.outbox.store import attempt_ordering_key, enqueue
from gateway.refunds.decisions import SQL
from gateway.store.db import Connection, Database, fetch_all, fetch_required


async def follow(conn: Connection, now: datetime, refund: dict[str, Any], state: AttemptState) -> dict[str, Any]:
    """Settle the order for a refund attempt now in ``state``; what the transition event adds."""
    order = await fetch_required(conn, SQL["lock_order_of_refund"], {"decision_id": refund["decision_id"]})
    settlement = refunds.after_refund(order["state"], state)
    if settlement.order_state is not None:
        await conn.execute(SQL["settle_order"], {"order_id": order["order_id"], "state": settlement.order_state,
                                                 "now": now})
    paid_attempt_id = order["paid_attempt_id"]
    if settlement.effect is not None:
        # One "refunded" per order (refunds are full); one "refund failed" per refund attempt.
        suffix = "" if settlement.effect == refunds.ORDER_REFUNDED else f":r{refund['refund_number']}"
        await enqueue(conn, dedup_key=f"attempt:{paid_attempt_id}:{settlement.effect}{suffix}",
                      kind=settlement.effect, now=now, attempt_id=paid_attempt_id,
                      ordering_key=attempt_ordering_key(paid_attempt_id), payload=_payload(order, refund, state))
    if settlement.closes_owed:
        await resolve_by_key(conn, refunds.owed_escalation_key(order["order_id"]), now,
                             f"refund attempt {refund['attempt_id']} Succeeded")
    return {"order_state": settlement.order_state or order["state"]}


def _payload(order: dict[str, Any], refund: dict[str, Any], state: AttemptState) -> dict[str, Any]:
    """What the merchant sink receives (API.md "Shapes"; docs/decisions/0020): identifiers, money
    and reasons, never a token."""
    return {"order_id": order["order_id"], "attempt_id": str(order["paid_attempt_id"]),
            "customer_id": order["customer_id"], "cause": order["cause"],
            "refund_attempt_id": str(refund["attempt_id"]), "refund_number": refund["refund_number"],
            "refund_state": state.value, "client_reference": refund["client_reference"],
            "provider_payment_id": refund["provider_payment_id"], "provider_refund_id": refund["provider_refund_id"],
            "amount_minor": refund["amount_minor"], "currency": refund["currency"],
            "outcome_reason": refund["outcome_reason"]}


async def raise_owed(db: Database, clock: Clock, *, reminder_interval_s: float, page: int = 100) -> int:
    """Escalate every cancelled order whose money is taken with no refund under way (seed 004,
    "Cancellation" and "Escalations"); how many new episodes. The refunds owed are read page by
    page in (updated_at, order_id) order (keyset: each page starts after the last order of the
    one before), each page in its own transaction that locks its orders (FOR NO KEY UPDATE SKIP
    LOCKED) and raises, so a refund resolving one at the same moment wins: it is re-read under that
    lock. Every owed order is reached, however many refunds are under way before it."""
    now = clock.now()
    raised = 0
    after: tuple[datetime, str] = (datetime.min.replace(tzinfo=UTC), "")
    while True:
        async with db.transaction() as conn:
            owed = await fetch_all(conn, SQL["owed_refunds"], {"now": now, "after_at": after[0], "after_id": after[1],
                                                               "limit": page})
            for order in owed:
                if await raise_escalation(conn, escalation_key=refunds.owed_escalation_key(order["order_id"]),
                                          reason="refund-owed", now=now, reminder_interval_s=reminder_interval_s,
                                          attempt_id=order["paid_attempt_id"],
                                          details={"order_id": order["order_id"]}) is not None:
                    raised += 1
        if len(owed) < page:
            return raised
        after = (owed[-1]["updated_at"], owed[-1]["order_id"])
