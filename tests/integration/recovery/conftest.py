"""Recovery workers over the checkout shop: same database, CardCo and ManualClock.

The recovery matrix of seed 004 runs against both adapters. Every test here runs once
on CardCo's account and once on a Stripe account served by the same fake's Stripe dialect
(``/stripe/v1/...``: same store, faults, clock and ledger), the gateway talking to it through its
Stripe adapter (the ``provider`` fixture and the ``shop`` on its test account are
tests/integration/conftest.py's)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.recovery.loop import Recovery
from gateway.settings import Settings
from provider_fake import CardCo, CardCoConfig
from provider_fake import Clock as CardCoClock
from provider_fake.config import Account
from tests.conftest import CARDCO_URL, LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.checkout.conftest import Shop
from tests.stripe_support import STRIPE_ACCOUNT, STRIPE_API_VERSION, stripe_account

STRIPE_KEY = "sk_test_recovery"
STRIPE_SECRET = "whsec_stripe_recovery_test"

WorkerFactory = Callable[[str], Recovery]


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """The suite's accounts plus the Stripe one (its base URL the fake's Stripe mount)."""
    return settings_with(database_url, redis_url, [
        account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT),
        stripe_account(base_url=CARDCO_URL + "/stripe", api_key=STRIPE_KEY, secret=STRIPE_SECRET)])


@pytest.fixture
def cardco(clock: object) -> CardCo:
    """The fake with the same accounts as ``settings``: CardCo's two and the Stripe-dialect one."""
    accounts = [Account(id=str(a["id"]), api_key=str(a["api_key"]), webhook_secrets=list(a["webhook_secrets"]))  # type: ignore[call-overload]
                for a in (account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT))]
    accounts.append(Account(id=STRIPE_ACCOUNT, api_key=STRIPE_KEY, dialect="stripe", webhook_secrets=[STRIPE_SECRET],
                            api_version=STRIPE_API_VERSION))
    return CardCo(CardCoConfig(accounts=accounts), clock=CardCoClock(base=clock.now))  # type: ignore[attr-defined]


@pytest.fixture
def worker(shop: Shop) -> WorkerFactory:
    """A recovery worker with its own identity, sharing the gateway's repositories and client."""
    services = shop.services

    def make(name: str = "recovery-1") -> Recovery:
        return Recovery(services.settings, services.clock, services.db, services.attempts, services.payments,
                        owner=name)

    return make
