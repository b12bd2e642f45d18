"""Round trips on the wire of the checkout's transactions, as PostgreSQL sees them (seed 004, PayAsync;
docs/decisions/0054): counted by a proxy on the server's socket (bench/support.py WireCounter),
not by the driver calls the gateway makes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.support import WireCounter
from gateway.clock import ManualClock
from gateway.payments.attempts import Attempts
from gateway.store.db import Database
from tests.integration.checkout.conftest import Shop


@pytest.fixture
def wire(database_url: str) -> Iterator[WireCounter]:
    """A counting proxy in front of the test's database."""
    with WireCounter(database_url) as counter:
        yield counter


async def test_the_started_transaction_is_one_round_trip(shop: Shop, clock: ManualClock, wire: WireCounter) -> None:
    """PayAsync's second transaction (NotStarted -> Started, its send intent, the effect record's
    AUTHORIZATION_ISSUED and the send gate's EXECUTING, seed 001) is one statement whose answer is
    read after the COMMIT it travels with: one turn on the wire. It fails if the answer is read
    before the COMMIT (two turns)."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    db = await Database.open(wire.url, size=1)
    try:
        attempts = Attempts(db, clock, shop.services.settings)
        await db.fetch_one("SELECT 1")  # the pool's connection is open before counting
        turns, statements = wire.count()
        started = await attempts.mark_started(attempt)
        after_turns, after_statements = wire.count()
    finally:
        await db.close()
    assert started is not None and started["state"] == "Started"
    assert (after_turns - turns, after_statements - statements) == (1, 3)  # BEGIN, mark_started, COMMIT
    assert await shop.events(attempt["attempt_id"]) == ["send_intent"]
