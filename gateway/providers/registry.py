"""Which adapter serves a provider account: the provider prefix of its id (``cardco:acct_store:test``
is CardCo's, ``stripe:acct_store:test`` Stripe's; seed 004, "The Attempt Row": the account id names
the provider, the account and the environment). An account of no known provider, or one whose timings the
provider does not honour, fails start-up (:func:`check_accounts`, from ``Services.open``).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.providers.base import Provider
from gateway.providers.cardco import CARDCO
from gateway.providers.stripe import STRIPE
from gateway.settings import ProviderAccount

PROVIDERS: dict[str, Provider] = {CARDCO.name: CARDCO, STRIPE.name: STRIPE}


def provider_name(account_id: str) -> str:
    return account_id.split(":", 1)[0]


def provider_for(account_id: str) -> Provider:
    """The adapter of the account's provider; KeyError for a provider paygate has no adapter for."""
    return PROVIDERS[provider_name(account_id)]


def check_accounts(accounts: Sequence[ProviderAccount]) -> None:
    """Every account has an adapter, and its key window is no longer than its provider keeps keys
    (a same-key resend after the provider pruned the key would be a new payment); ValueError naming it."""
    for account in accounts:
        name = provider_name(account.id)
        if name not in PROVIDERS:
            raise ValueError(f"provider account {account.id}: paygate has no adapter for provider {name!r}")
        window = PROVIDERS[name].timings.key_window_s
        if account.key_window_s > window:
            raise ValueError(f"provider account {account.id}: key_window_s {account.key_window_s:g} exceeds "
                             f"{name}'s idempotency-key window of {window:g} s")
