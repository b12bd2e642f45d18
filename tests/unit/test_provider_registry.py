"""The provider seam's registry (docs/decisions/0046): the adapter of an account is
chosen by the provider prefix of its id, and an account paygate cannot serve safely fails start-up."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from gateway.payouts.attempts import PAYOUT
from gateway.payouts.config import attempt_timings
from gateway.payouts.recalls import RECALL
from gateway.pipeline.kind import AttemptKind
from gateway.providers import provider_for
from gateway.providers.cardco import CARDCO
from gateway.providers.registry import check_accounts
from gateway.refunds.attempts import REFUND
from gateway.settings import ConfigError, Settings, build_settings
from jobs import runtime


def configured(*accounts: dict[str, object]) -> Settings:
    """The accounts given; a Stripe one pins ``2025-09-30.clover`` unless it says otherwise."""
    return build_settings({"database_url": "postgresql://x", "redis_url": "redis://x", "token_pepper": "p",
                           "provider_accounts": [{"base_url": "https://api.example", "api_key": "k",
                                                  "webhook_endpoint_id": a["id"],
                                                  **({"api_version": "2025-09-30.clover"}
                                                     if str(a["id"]).startswith("stripe:") else {}), **a}
                                                 for a in accounts]})


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
    """A provider's visibility delay joins seed 000's NotApplied cutoff when it is longer
    than the account's processing allowance, where "not found" can close an attempt at all; Stripe
    enforces no request expiry, so its search lag never postpones the escalation deadline."""
    settings = configured({"id": "cardco:acct_store:test"}, {"id": "stripe:acct_store:test"})
    cardco, stripe = settings.provider_accounts
    assert attempt_timings(settings, cardco).visibility_delay_s == 10
    assert attempt_timings(settings, stripe).visibility_delay_s == 10
    lagging = dataclasses.replace(CARDCO.timings, visibility_delay_s=45)
    monkeypatch.setattr(CARDCO, "timings", lagging)
    assert attempt_timings(settings, cardco).visibility_delay_s == 45


@pytest.mark.parametrize("kind", [PAYOUT, RECALL, REFUND], ids=lambda kind: kind.name)
def test_the_accounts_listing_lag_joins_the_not_applied_cutoff_of_every_kind(kind: AttemptKind) -> None:
    """Seed 000, "Reconciliation and retry": the lookup that records NotApplied must start after the
    cutoff plus the provider's documented visibility delay. CardCo's lag is its
    deployment's, stated on the account: 400 s moves the cutoff of a payout, a recall and a refund
    to send deadline + skew 30 s + 400 s; unset, the processing allowance (10 s) still stands."""
    settings = configured({"id": "cardco:acct_store:test", "visibility_delay_s": 400},
                          {"id": "cardco:acct_store:live"})
    lagging, plain = settings.provider_accounts
    deadline = datetime(2026, 11, 29, 16, 5, tzinfo=UTC)
    assert kind.timings(settings, lagging).not_applied_cutoff(deadline) == deadline + timedelta(seconds=430)
    assert kind.timings(settings, plain).not_applied_cutoff(deadline) == deadline + timedelta(seconds=40)


def test_a_visibility_delay_shorter_than_the_provider_documents_fails_start_up() -> None:
    """Stripe's search may lag 60 s: an account claiming less would let an early "not found" count."""
    check_accounts(configured({"id": "stripe:acct_store:test", "visibility_delay_s": 90},
                              {"id": "cardco:acct_store:test", "visibility_delay_s": 0}))
    with pytest.raises(ValueError, match="visibility_delay_s 10 is shorter than stripe's documented visibility delay"):
        check_accounts(configured({"id": "stripe:acct_store:test", "visibility_delay_s": 10}))


async def test_a_worker_refuses_the_same_accounts_before_it_opens_anything() -> None:
    """The provider's timings: the worker runs the sends and lookups, so it refuses an
    account its provider cannot serve safely exactly as the web process does (no database needed)."""
    runtime.configure(configured({"id": "stripe:acct_store:test", "key_window_s": 90_000}))
    try:
        with pytest.raises(ValueError, match="key_window_s 90000 exceeds"):
            await runtime.current()
    finally:
        runtime.configure(None)


def test_a_stripe_account_without_its_pinned_api_version_fails_start_up_saying_where_to_find_it() -> None:
    """Stripe answers an unknown version with 400 "Invalid Stripe API version" on every call, and
    the settings' default is CardCo's: a Stripe account must pin its own (Stripe's API reference,
    "Versioning": the account's version is set in Workbench). A CardCo account keeps the default."""
    bare = build_settings({"database_url": "postgresql://x", "redis_url": "redis://x", "token_pepper": "p",
                           "provider_accounts": [
                               {"id": "stripe:acct_store:test", "base_url": "https://api.stripe.com", "api_key": "k",
                                "webhook_endpoint_id": "stripe-test"},
                               {"id": "cardco:acct_store:test", "base_url": "https://api.example", "api_key": "k",
                                "webhook_endpoint_id": "cardco-test"}]})
    with pytest.raises(ValueError, match=r"stripe:acct_store:test: api_version is required for a Stripe account: "
                                         r".*Developers -> API version \(Workbench"):
        check_accounts(bare)
    check_accounts(configured({"id": "cardco:acct_store:test"}))


@pytest.mark.parametrize("version, problem", [
    ("2026-11-01", "lacks its release name"),  # the settings' default, CardCo's: not a version Stripe issued
    ("2023-10-16.acacia", "names a release"),
    ("2025-02-30.basil", "does not name a calendar date"),
    ("latest", "is not a Stripe API version"),
])
def test_a_stripe_account_pinning_a_version_stripe_never_issued_fails_start_up(version: str, problem: str) -> None:
    with pytest.raises(ValueError, match=f"stripe:acct_store:test: api_version '{version}' {problem}"):
        check_accounts(configured({"id": "stripe:acct_store:test", "api_version": version}))


def _connect(*accounts: dict[str, object]) -> Settings:
    return configured(*({"webhook_endpoint_id": "stripe-connect", "webhook_secrets": ["whsec_connect"], **a}
                        for a in accounts))


def test_accounts_share_a_connect_endpoint_only_each_naming_another_connected_account() -> None:
    """Stripe Connect: one endpoint delivers the platform's events and its connected accounts'
    (each event's ``account``), signed with the endpoint's one secret."""
    settings = _connect({"id": "stripe:acct_platform:test"},
                        {"id": "stripe:acct_shopa:test", "stripe_account": "acct_1ShopA"})
    assert settings.connected_account("stripe-connect", "stripe", "acct_1ShopA").id == "stripe:acct_shopa:test"
    assert settings.connected_account("stripe-connect", "stripe", None).id == "stripe:acct_platform:test"
    assert settings.connected_account("stripe-connect", "stripe", "acct_1Other") is None
    with pytest.raises(ConfigError, match="must be unique, unless the accounts sharing one each name another"):
        _connect({"id": "stripe:acct_shopa:test", "stripe_account": "acct_1ShopA"},
                 {"id": "stripe:acct_shopb:test", "stripe_account": "acct_1ShopA"})
    with pytest.raises(ConfigError, match="must list the same webhook_secrets"):
        _connect({"id": "stripe:acct_platform:test"},
                 {"id": "stripe:acct_shopa:test", "stripe_account": "acct_1ShopA", "webhook_secrets": ["whsec_x"]})
    with pytest.raises(ConfigError, match="stripe_account"):
        _connect({"id": "stripe:acct_shopa:test", "stripe_account": "shop-a"})


def test_every_call_of_a_connected_account_carries_stripe_account_and_cardco_has_none() -> None:
    """Stripe's "Making API calls for connected accounts": the platform's key, the connected
    account in ``Stripe-Account``; the platform's own account sends none; CardCo has no Connect."""
    shop, platform = _connect({"id": "stripe:acct_shopa:test", "stripe_account": "acct_1ShopA"},
                              {"id": "stripe:acct_platform:test"}).provider_accounts
    assert provider_for(shop.id).headers(shop, "sk")["Stripe-Account"] == "acct_1ShopA"
    assert "Stripe-Account" not in provider_for(platform.id).headers(platform, "sk")
    with pytest.raises(ValueError, match="cardco:acct_store:test: stripe_account is a Stripe Connect setting"):
        check_accounts(configured({"id": "cardco:acct_store:test", "stripe_account": "acct_1ShopA"}))


def test_an_account_pinning_a_version_before_search_must_look_payments_up_by_listing() -> None:
    """Stripe's Search guide: "The minimum supported API Version to use search is 2020-08-27"; such
    an account looks payments up by listing PaymentIntents (``payment_lookup = "list"``)."""
    with pytest.raises(ValueError, match=r"predates the Search API \(2020-08-27\): set payment_lookup = \"list\""):
        check_accounts(configured({"id": "stripe:acct_store:test", "api_version": "2019-12-03"}))
    check_accounts(configured({"id": "stripe:acct_store:test", "api_version": "2019-12-03", "payment_lookup": "list"}))
    check_accounts(configured({"id": "stripe:acct_store:test", "api_version": "2020-08-27"}))
