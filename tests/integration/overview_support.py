"""What the Overview's tests (the read model's and the browser's) start from, made by the real
pipeline: CardCo in-process answers one payment (ORD-OK), declines one a minute later (ORD-NO) and
loses the answer of a third (ORD-LOST: seed 004, an unanswered call is Unknown, never failed); the
merchant's sink refuses ORD-OK's confirmation until the outbox dead-letters it and escalates
(seed 004, "Downstream Work")."""

from __future__ import annotations

from tests.integration.checkout.conftest import Shop
from tests.integration.outbox_support import World


async def success_decline_unknown_dead_letter(shop: Shop, world: World) -> None:
    await shop.order("ORD-OK")
    assert (await shop.pay("ORD-OK")).json()["state"] == "Succeeded"
    world.clock.advance(60)
    await shop.order("ORD-NO", payment_method="pm_card_declined")
    assert (await shop.pay("ORD-NO")).json()["state"] == "Failed"
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    await shop.order("ORD-LOST")
    lost = await shop.pay("ORD-LOST")
    assert (lost.status_code, lost.json()["state"]) == (202, "Unknown")
    [paid] = await shop.attempts("ORD-OK")
    await world.fail_until_dead(f"attempt:{paid['attempt_id']}:order-confirmation")
