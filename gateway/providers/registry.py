"""Which adapter serves a provider account: the provider prefix of its id (``cardco:acct_store:test``
is CardCo's, ``stripe:acct_store:test`` Stripe's; seed 004, "The Attempt Row": the account id names
the provider, the account and the environment). An account of no known provider, or one whose timings the
provider does not honour, fails the gateway's start-up (:func:`check_accounts`, from ``Services.open``).
"""

from __future__ import annotations

from gateway.providers.base import Provider
from gateway.providers.cardco import CARDCO
from gateway.providers.stripe import STRIPE
from gateway.settings import Settings

PROVIDERS: dict[str, Provider] = {CARDCO.name: CARDCO, STRIPE.name: STRIPE}


def provider_name(account_id: str) -> str:
    return account_id.split(":", 1)[0]


def provider_for(account_id: str) -> Provider:
    """The adapter of the account's provider; KeyError for a provider paygate has no adapter for."""
    return PROVIDERS[provider_name(account_id)]


def check_accounts(settings: Settings) -> None:
    """Every configured account has an adapter, none of the problems its provider finds in it (a
    Stripe account's pinned API version, :meth:`Provider.account_problem`), and timings its
    provider honours (ValueError naming it): a key window no longer than the provider keeps keys
    (a same-key resend after the provider pruned the key would be a new payment), a visibility
    delay no shorter than the provider documents (a "not found" inside it proves nothing), and a
    lookup rate no higher than the provider documents."""
    for account in settings.provider_accounts:
        name = provider_name(account.id)
        if name not in PROVIDERS:
            raise ValueError(f"provider account {account.id}: paygate has no adapter for provider {name!r}")
        problem = PROVIDERS[name].account_problem(account)
        if problem is not None:
            raise ValueError(f"provider account {account.id}: {problem}")
        timings = PROVIDERS[name].timings
        if account.key_window_s > timings.key_window_s:
            raise ValueError(f"provider account {account.id}: key_window_s {account.key_window_s:g} exceeds "
                             f"{name}'s idempotency-key window of {timings.key_window_s:g} s")
        if account.visibility_delay_s is not None and account.visibility_delay_s < timings.visibility_delay_s:
            raise ValueError(f"provider account {account.id}: visibility_delay_s {account.visibility_delay_s:g} is "
                             f"shorter than {name}'s documented visibility delay of {timings.visibility_delay_s:g} s")
        rate, _ = settings.lookup_limit(account)
        if timings.lookups_per_s and rate > timings.lookups_per_s:
            raise ValueError(f"provider account {account.id}: lookup_rate_per_s {rate:g} exceeds "
                             f"{name}'s documented {timings.lookups_per_s:g} lookups per second")
