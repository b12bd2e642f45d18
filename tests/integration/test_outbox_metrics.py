"""Outbox lag and dead letters in ``/metrics`` (seed 004, "Downstream Work": the
dispatcher "dead-letters a row after a bounded number of failures", and "dead-lettering raises an
escalation"): a real dispatcher, a sink that refuses, an operator's retry."""

from __future__ import annotations

import httpx

from gateway.services import Services
from tests.integration.metrics_support import scrape
from tests.integration.outbox_support import World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]


async def test_a_dead_letter_shows_until_an_operator_retries_it_and_blocks_its_successor_meanwhile(
        world: World, client: httpx.AsyncClient, services: Services) -> None:
    attempt = await world.attempt()
    confirmation = await world.effect(attempt, "order-confirmation")
    await world.effect(attempt, "refund")  # waits behind the confirmation: same ordering key
    started = world.clock.now()
    await world.fail_until_dead(f"attempt:{attempt}:order-confirmation")

    seen = await scrape(client)
    assert seen.value("paygate_outbox_dead_letters", kind="order-confirmation") == 1
    assert seen.value("paygate_outbox_lag_seconds", kind="refund") == (world.clock.now() - started).total_seconds()
    assert seen.value("paygate_escalations_open", reason="outbox-dead-lettered") == 1
    assert seen.series("paygate_payout_escalations_open") == []  # a checkout effect, not the pipeline's
    assert seen.value("paygate_payout_outbox_dead_letters", kind="payout") == 0

    operator = {"Authorization": f"Bearer {await services.tokens.create('operator', 'operator-1')}"}
    assert (await client.post(f"/v1/ops/outbox/{confirmation}/retry", headers=operator)).status_code == 200
    await world.dispatch()
    await world.dispatch()
    seen = await scrape(client)
    assert seen.series("paygate_outbox_dead_letters") == []
    assert seen.series("paygate_outbox_lag_seconds") == []
