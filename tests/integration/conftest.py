"""What the integration suites share: the provider the seed 004 matrices run against,
and the checkout shop paying on that provider's test account.

The recovery matrix (tests/integration/recovery) and the core notification matrix
(tests/integration/notifications) run every test that asks for ``provider`` once against
CardCo and once against Stripe. A test or module whose subject is CardCo's own behaviour (its
signature scheme, its synthesized keys, its webhook faults) says so, and why: a test with
``CARDCO_ONLY``, a module by importing ``cardco_only`` as its ``provider``."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop
from tests.integration.checkout.conftest import shop as cardco_shop  # noqa: F401  (the checkout suite's Shop)
from tests.stripe_support import STRIPE_ACCOUNT, STRIPE_API_VERSION

PROVIDERS = ("cardco", "stripe")
# Each provider's test account, in the fake's CardCo or Stripe dialect.
TEST_ACCOUNTS = {"cardco": TEST_ACCOUNT, "stripe": STRIPE_ACCOUNT}
# Direct parametrization overrides the ``provider`` fixture: the test runs on CardCo alone.
CARDCO_ONLY = pytest.mark.parametrize("provider", ["cardco"])


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stripe_event_version() -> str:
    """The API version the fake's Stripe accounts render their events in: the one the gateway's
    Stripe accounts pin, as when the webhook endpoint was created with it (README, "Stripe")."""
    return STRIPE_API_VERSION


@pytest.fixture
def cardco_only() -> str:
    """The ``provider`` of a module that runs on CardCo alone (imported as ``provider``)."""
    return "cardco"


@pytest.fixture
def shop(cardco_shop: Shop, provider: str) -> Shop:  # noqa: F811
    """The checkout shop, its orders on the ``provider``'s test account (a suite's own ``shop``,
    like the checkout suite's, takes precedence)."""
    cardco_shop.account = TEST_ACCOUNTS[provider]
    return cardco_shop
