"""The provider seam's registry (issue 16; docs/decisions/0046): the adapter of an account is
chosen by the provider prefix of its id, and an account paygate cannot serve safely fails start-up."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.payouts.config import payout_timings
from gateway.providers import provider_for
from gateway.providers.cardco import CARDCO
from gateway.providers.registry import check_accounts
from gateway.settings import Settings, build_settings
from jobs import runtime


def configured(*accounts: dict[str, object]) -> Settings:
    return build_settings({"database_url": "postgresql://x", "redis_url": "redis://x", "token_pepper": "p",
                           "provider_accounts": [{"base_url": "https://api.example", "api_key": "k",
                                                  "webhook_endpoint_id": a["id"], **a} for a in accounts]})


def test_the_account_ids_prefix_chooses_the_adapter() -> None:
    assert provider_for("cardco:acct_store:test").name == "cardco"
    assert provider_for("stripe:acct_store:live").name == "stripe"


def test_an_account_of_a_provider_without_an_adapter_fails_start_up() -> None:
    with pytest.raises(ValueError, match="no adapter for provider 'paypal'"):
        check_accounts(configured({"id": "cardco:acct_store:test"}, {"id": "paypal:acct_store:test"}))


def test_a_key_window_longer_than_the_provider_keeps_keys_fails_start_up() -> None:
    """Stripe may prune a key after 24 h: a same-key resend after that could be a second payment."""
    check_accounts(configured({"id": "stripe:acct_store:test", "key_window_s": 86_400}))
    with pytest.raises(ValueError, match="stripe:acct_store:test: key_window_s 90000 exceeds"):
        check_accounts(configured({"id": "stripe:acct_store:test", "key_window_s": 90_000}))


def test_a_lookup_rate_above_the_providers_documented_limit_fails_start_up() -> None:
    """Stripe's Search API allows 20 reads per second; CardCo documents no limit of its own."""
    check_accounts(configured({"id": "stripe:acct_store:test", "lookup_rate_per_s": 20}))
    check_accounts(configured({"id": "cardco:acct_store:test", "lookup_rate_per_s": 500}))
    with pytest.raises(ValueError, match="lookup_rate_per_s 25 exceeds stripe's documented 20"):
        check_accounts(configured({"id": "stripe:acct_store:test", "lookup_rate_per_s": 25}))


def test_the_not_applied_cutoff_waits_out_the_providers_visibility_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16: a provider's visibility delay joins seed 000's NotApplied cutoff when it is longer
    than the account's processing allowance, where "not found" can close an attempt at all; Stripe
    enforces no request expiry, so its search lag never postpones the escalation deadline."""
    settings = configured({"id": "cardco:acct_store:test"}, {"id": "stripe:acct_store:test"})
    cardco, stripe = settings.provider_accounts
    assert payout_timings(settings, cardco).visibility_delay_s == 10
    assert payout_timings(settings, stripe).visibility_delay_s == 10
    lagging = dataclasses.replace(CARDCO.timings, visibility_delay_s=45)
    monkeypatch.setattr(CARDCO, "timings", lagging)
    assert payout_timings(settings, cardco).visibility_delay_s == 45


async def test_a_worker_refuses_the_same_accounts_before_it_opens_anything() -> None:
    """Issue 16, the provider's timings: the worker runs the sends and lookups, so it refuses an
    account its provider cannot serve safely exactly as the web process does (no database needed)."""
    runtime.configure(configured({"id": "stripe:acct_store:test", "key_window_s": 90_000}))
    try:
        with pytest.raises(ValueError, match="key_window_s 90000 exceeds"):
            await runtime.current()
    finally:
        runtime.configure(None)
