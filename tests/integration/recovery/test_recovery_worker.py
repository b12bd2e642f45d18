"""The recovery loop as it runs in production: the clock's wake-up on the real broker, a real
Dramatiq worker running ``recover_attempts`` with its own pool and HTTP client (routed to CardCo)."""

from __future__ import annotations

import asyncio

import dramatiq

from gateway.clock import ManualClock
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.test_recovery_loop import row, unknown_payment
from tests.integration.test_jobs import jobs_runtime, run_worker_until_idle  # noqa: F401  (the real broker)


async def test_a_lost_response_is_recovered_by_a_real_worker_with_one_payment(
        shop: Shop, clock: ManualClock, jobs_runtime: dramatiq.Broker) -> None:  # noqa: F811
    """Seed 004 matrix: "Recovery that finds the payment resolves it to Succeeded with one payment in
    total", end to end through the clock's wake-up, the broker and a worker process's actor."""
    from jobs.recovery import recover_attempts

    attempt = await unknown_payment(shop, action="drop_response")
    clock.advance(60)
    recover_attempts.send()
    recover_attempts.send()  # a duplicated wake-up changes nothing
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    resolved = await row(shop, attempt["attempt_id"])
    assert resolved["state"] == "Succeeded" and resolved["recovery_owner"] is None
    assert len(shop.ledger()) == 1
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_a_request_that_never_arrived_is_resent_once_by_two_workers(
        shop: Shop, clock: ManualClock, jobs_runtime: dramatiq.Broker) -> None:  # noqa: F811
    """Seed 004 matrix: a same-key resend inside the window produces exactly one payment, with several
    worker threads taking several wake-ups at once."""
    from jobs.recovery import recover_attempts

    attempts = [await unknown_payment(shop, f"ORD-{n}", action="timeout_before_effect") for n in range(3)]
    clock.advance(60)
    for _ in range(4):
        recover_attempts.send()
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    assert [(await row(shop, a["attempt_id"]))["state"] for a in attempts] == ["Succeeded"] * 3
    assert len(shop.ledger()) == 3
    assert len(shop.provider_requests()) == 6, "three first sends, three resends, nothing more"
