"""Recovery workers over the checkout shop: same database, CardCo and ManualClock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.recovery.loop import Recovery
from tests.integration.checkout.conftest import Shop, shop  # noqa: F401  (the checkout suite's Shop)

WorkerFactory = Callable[[str], Recovery]


@pytest.fixture
def worker(shop: Shop) -> WorkerFactory:  # noqa: F811
    """A recovery worker with its own identity, sharing the gateway's repositories and client."""
    services = shop.services

    def make(name: str = "recovery-1") -> Recovery:
        return Recovery(services.settings, services.clock, services.db, services.attempts, services.payments,
                        owner=name)

    return make
