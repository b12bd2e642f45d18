"""The provider seam's registry (issue 16; docs/decisions/0046): the adapter of an account is
chosen by the provider prefix of its id, and an account paygate cannot serve safely fails start-up."""

from __future__ import annotations

import pytest

from gateway.providers import provider_for
from gateway.providers.registry import check_accounts
from gateway.settings import ProviderAccount


def account(account_id: str, **overrides: object) -> ProviderAccount:
    return ProviderAccount.model_validate({"id": account_id, "base_url": "https://api.example", "api_key": "k",
                                           "webhook_endpoint_id": "e", **overrides})


def test_the_account_ids_prefix_chooses_the_adapter() -> None:
    assert provider_for("cardco:acct_store:test").name == "cardco"
    assert provider_for("stripe:acct_store:live").name == "stripe"


def test_an_account_of_a_provider_without_an_adapter_fails_start_up() -> None:
    with pytest.raises(ValueError, match="no adapter for provider 'paypal'"):
        check_accounts([account("cardco:acct_store:test"), account("paypal:acct_store:test")])


def test_a_key_window_longer_than_the_provider_keeps_keys_fails_start_up() -> None:
    """Stripe may prune a key after 24 h: a same-key resend after that could be a second payment."""
    check_accounts([account("stripe:acct_store:test", key_window_s=86_400)])
    with pytest.raises(ValueError, match="stripe:acct_store:test: key_window_s 90000 exceeds"):
        check_accounts([account("stripe:acct_store:test", key_window_s=90_000)])
