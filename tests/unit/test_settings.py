"""Configuration is validated at start-up, with messages naming the setting
(seed 004 test matrix: "A MaximumCallDuration that is zero, negative, or out of range fails at startup")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.payouts.config import attempt_timings
from gateway.settings import MAX_DURATION_S, ConfigError, build_settings, load_settings
from paygate_local import demo
from paygate_local.demo import REHEARSAL_ACCOUNT, REHEARSAL_GLOBAL
from provider_fake.config import CardCoConfig

BASE = {"DATABASE_URL": "postgresql:///x", "REDIS_URL": "redis://127.0.0.1:1/0", "PAYGATE_TOKEN_PEPPER": "p"}


def account(**overrides: object) -> dict[str, object]:
    return {"id": "cardco:acct_store:test", "base_url": "http://cardco.test", "api_key": "k",
            "webhook_endpoint_id": "cardco-test", **overrides}


def accounts_env(*accounts: dict[str, object]) -> dict[str, str]:
    return {**BASE, "PAYGATE_PROVIDER_ACCOUNTS": json.dumps(list(accounts))}


@pytest.mark.parametrize("value", [0, -1, MAX_DURATION_S + 1])
def test_maximum_call_duration_zero_negative_or_out_of_range_fails_naming_the_setting(value: float) -> None:
    """Seed 004 matrix: a MaximumCallDuration that is zero, negative, or out of range fails at startup."""
    with pytest.raises(ConfigError, match=r"provider_accounts\.0\.maximum_call_duration_s"):
        load_settings(accounts_env(account(maximum_call_duration_s=value)))


@pytest.mark.parametrize("name", ["PAYGATE_RECOVERY_LEASE_S", "PAYGATE_CLOCK_TICK_S", "PAYGATE_REMINDER_INTERVAL_S"])
def test_global_duration_of_zero_fails_naming_the_setting(name: str) -> None:
    with pytest.raises(ConfigError, match=name.removeprefix("PAYGATE_").lower()):
        load_settings({**BASE, name: "0"})


def test_every_bad_setting_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({**accounts_env(account(call_budget_s=-5)), "PAYGATE_RECOVERY_LEASE_S": "-1"})
    assert "recovery_lease_s" in str(caught.value)
    assert "provider_accounts.0.call_budget_s" in str(caught.value)


def test_missing_database_url_is_named() -> None:
    with pytest.raises(ConfigError, match="database_url"):
        load_settings({"REDIS_URL": "redis://x", "PAYGATE_TOKEN_PEPPER": "p"})


def test_safety_margin_must_sit_inside_the_key_window() -> None:
    """Seed 004: the escalation deadline is first_sent_at + key window - safety margin, well inside the window."""
    with pytest.raises(ConfigError, match="escalation_safety_margin_s"):
        load_settings(accounts_env(account(key_window_s=100, escalation_safety_margin_s=100)))


def test_account_id_names_provider_account_and_environment() -> None:
    with pytest.raises(ConfigError, match="provider:account:test"):
        load_settings(accounts_env(account(id="cardco-acct-store")))


def test_webhook_secrets_must_be_whsec() -> None:
    with pytest.raises(ConfigError, match="whsec_"):
        load_settings(accounts_env(account(webhook_secrets=["plain"])))


def test_duplicate_accounts_are_refused() -> None:
    with pytest.raises(ConfigError, match="unique"):
        load_settings(accounts_env(account(), account()))


def test_unknown_setting_in_a_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "paygate.json"
    config.write_text(json.dumps({"recovery_lease": 5}))
    with pytest.raises(ConfigError, match="recovery_lease"):
        load_settings({**BASE, "PAYGATE_CONFIG": str(config)})


def test_file_then_environment_with_environment_winning(tmp_path: Path) -> None:
    config = tmp_path / "paygate.toml"
    config.write_text('recovery_lease_s = 40\nclock_tick_s = 2\n[[provider_accounts]]\nid = "cardco:acct_store:live"\n'
                      'base_url = "http://cardco.test"\napi_key = "k"\nwebhook_endpoint_id = "cardco-live"\n')
    settings = load_settings({**BASE, "PAYGATE_CONFIG": str(config), "PAYGATE_CLOCK_TICK_S": "3"})
    assert settings.recovery_lease_s == 40
    assert settings.clock_tick_s == 3
    live = settings.account("cardco:acct_store:live")
    assert live is not None and live.environment == "live"
    assert settings.account("cardco:acct_store:test") is None


def test_unreadable_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings({**BASE, "PAYGATE_CONFIG": str(tmp_path / "missing.json")})


def test_secrets_do_not_appear_in_the_settings_repr() -> None:
    settings = load_settings(accounts_env(account(api_key="ck_test_very_secret")))
    assert "ck_test_very_secret" not in repr(settings)
    assert "ck_test_very_secret" not in str(settings.model_dump())


def test_recovery_lease_shorter_than_a_worst_case_pass_is_refused_naming_the_settings() -> None:
    """Seed 004, "The Recovery Loop": the lease must be longer than the worst
    case of one pass (lookup + resend + record budgets) plus the clock skew between hosts."""
    with pytest.raises(ConfigError) as caught:
        load_settings({**accounts_env(account(call_budget_s=3, record_budget_s=2)), "PAYGATE_RECOVERY_LEASE_S": "5"})
    message = str(caught.value)
    for named in ("recovery_lease_s (5)", "provider_accounts.0 (cardco:acct_store:test)", "call_budget_s 3",
                  "record_budget_s 2", "recovery_lease_margin_s 2", "= 10"):
        assert named in message


def test_recovery_lease_is_checked_against_every_account() -> None:
    """A pass runs under its attempt's own account, so the slowest account decides."""
    fast = account(call_budget_s=3, record_budget_s=2)
    slow = account(id="cardco:acct_store:live", webhook_endpoint_id="cardco-live", call_budget_s=10)
    with pytest.raises(ConfigError, match=r"provider_accounts\.1 \(cardco:acct_store:live\)"):
        load_settings({**accounts_env(fast, slow), "PAYGATE_RECOVERY_LEASE_S": "12"})
    assert load_settings({**accounts_env(fast, slow), "PAYGATE_RECOVERY_LEASE_S": "28"}).recovery_lease_s == 28


def test_rehearsal_timings_satisfy_the_lease_rule_with_a_12_s_lease() -> None:
    """API.md "Command line": ``--rehearsal`` uses a 12 s lease, longer than a
    worst-case pass (lookup 3 s + resend 3 s + record 2 s, plus margin)."""
    config = {"database_url": "postgresql:///x", "redis_url": "redis://127.0.0.1:1/0", "token_pepper": "p",
              "provider_accounts": [account(**REHEARSAL_ACCOUNT)], **REHEARSAL_GLOBAL}
    settings = build_settings(config)
    assert settings.recovery_lease_s == 12
    with pytest.raises(ConfigError, match="recovery_lease_s"):
        build_settings({**config, "recovery_lease_s": 10})


def test_lookup_rate_and_burst_default_and_an_account_overrides_either() -> None:
    """Docs/decisions/0042: one lookup rate and burst for every account, unless
    the account sets its own; the environment sets the top-level ones."""
    settings = load_settings({**accounts_env(account(), account(id="cardco:acct_other:live", lookup_burst=7,
                                                                webhook_endpoint_id="other")),
                              "PAYGATE_LOOKUP_RATE_PER_S": "2.5"})
    store, other = settings.provider_accounts
    assert settings.lookup_limit(store) == (2.5, 100)
    assert settings.lookup_limit(other) == (2.5, 7)
    assert load_settings(accounts_env(account())).lookup_limit(store) == (20, 100)


@pytest.mark.parametrize("change", [{"PAYGATE_LOOKUP_RATE_PER_S": "0"}, {"PAYGATE_LOOKUP_BURST": "2"}])
def test_a_lookup_rate_that_is_not_positive_or_a_burst_below_one_pass_fails_naming_the_setting(
        change: dict[str, str]) -> None:
    """A zero rate would stop every lookup, and a burst below the three reads one
    recovery pass takes together could never start one."""
    with pytest.raises(ConfigError, match=next(iter(change)).removeprefix("PAYGATE_").lower()):
        load_settings({**BASE, **change})
    with pytest.raises(ConfigError, match="provider_accounts.0.lookup_burst"):
        load_settings(accounts_env(account(lookup_burst=1)))


@pytest.mark.parametrize("rehearsal", [False, True], ids=["normal", "rehearsal"])
def test_paygate_up_gives_cardco_and_the_gateways_cardco_accounts_one_listing_lag(tmp_path: Path,
                                                                                  rehearsal: bool) -> None:
    """``paygate up`` configures the CardCo fake's listing lag and the gateway's
    CardCo accounts from one value, and the NotApplied cutoff waits it out; the Stripe account keeps
    Stripe's documented delay (longer than the fake's lag)."""
    urls = demo.Urls("http://127.0.0.1:8000", "http://127.0.0.1:8100", "http://127.0.0.1:8200")
    stored = demo.load_or_create_secrets(tmp_path)
    settings = build_settings({"database_url": "postgresql:///x", "redis_url": "redis://127.0.0.1:1/0",
                               **demo.gateway_config(stored, urls, rehearsal=rehearsal)})
    cardco = CardCoConfig.model_validate(demo.cardco_config(stored, urls, rehearsal=rehearsal))
    lag = demo.VISIBILITY_DELAY_S[rehearsal]
    assert cardco.visibility_delay_s == lag
    assert {a.id: a.visibility_delay_s for a in settings.provider_accounts} == {
        "cardco:acct_store:test": lag, "cardco:acct_store:live": lag, "stripe:acct_store:test": None}
    for cardco_account in settings.provider_accounts[:2]:
        assert attempt_timings(settings, cardco_account).visibility_delay_s == lag
