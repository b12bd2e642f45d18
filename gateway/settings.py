"""Configuration, validated once at start-up and passed down (STYLE: one Settings object).

Sources, later ones winning: built-in defaults, an optional file named by ``PAYGATE_CONFIG``
(JSON or TOML), then environment variables (``DATABASE_URL``, ``REDIS_URL``, ``PAYGATE_<NAME>``
for every top-level setting, ``PAYGATE_PROVIDER_ACCOUNTS`` as JSON). A duration that is zero,
negative or out of range fails start-up with a message naming the setting (seed 004 test
matrix: "A MaximumCallDuration that is zero, negative, or out of range fails at startup").
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.domain.provider_accounts import ACCOUNT_ID
from gateway.domain.return_urls import return_url_problem

# The largest delay a timer in any of our runtimes accepts without surprises: 2^31-1 ms, the
# bound the seed uses for a CancellationTokenSource delay.
MAX_DURATION_S = (2**31 - 1) / 1000


def _positive_duration(value: float) -> float:
    if not value > 0:
        raise ValueError("must be a positive number of seconds")
    if value > MAX_DURATION_S:
        raise ValueError(f"must be at most {MAX_DURATION_S} seconds")
    return value


Duration = Annotated[float, AfterValidator(_positive_duration)]

# Provider lookups per second and the burst a quiet account may spend at once (seed 004: lookups
# run "at a rate the provider's limits allow"; docs/decisions/0042). The burst holds at least the
# three reads one recovery pass may make (by id, by reference, the payment-method check), which it
# takes together: a smaller bucket could never start such a pass.
LookupRate = Annotated[float, Field(gt=0, le=100_000)]
LookupBurst = Annotated[int, Field(ge=3, le=1_000_000)]

# A provider's listing lag: zero (none) or a duration a timer accepts.
VisibilityDelay = Annotated[float, Field(ge=0, le=MAX_DURATION_S)]



class ConfigError(Exception):
    """The configuration is invalid; the message names every offending setting."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderAccount(_Model):
    """One provider account in one environment, e.g. ``cardco:acct_store:live`` (seed 004,
    "The Attempt Row": provider_account), with the timings pinned onto its attempts."""

    id: str
    base_url: str
    api_key: SecretStr
    api_version: str = "2026-11-01"
    webhook_endpoint_id: str
    webhook_secrets: list[SecretStr] = Field(default_factory=list)
    webhook_public_keys: list[str] = Field(default_factory=list)
    # Notification deduplication (seed 004, "Notification Deduplication"): whether the provider's
    # event semantics allow a synthesized key, and whether its delivery id is stable.
    synthesized_notification_keys: bool = False
    webhook_id_stable: bool = False
    key_window_s: Duration = 86_400
    escalation_safety_margin_s: Duration = 3_600
    abandonment_threshold_s: Duration = 60
    call_budget_s: Duration = 15
    record_budget_s: Duration = 5
    start_budget_s: Duration = 5
    maximum_call_duration_s: Duration = 30
    processing_allowance_s: Duration = 10
    # How long the provider may hide a new payout, recall or refund from a lookup by client
    # reference (CardCo's listing lag, API.md: "may lag behind writes by a configured visibility
    # delay"); the NotApplied cutoff waits it out (seed 000). None: the delay the
    # provider documents (gateway.providers); the CardCo deployment's own lag must be set here.
    visibility_delay_s: VisibilityDelay | None = None
    lookup_backoff_s: list[Duration] = Field(default_factory=lambda: [60.0, 120.0, 300.0, 900.0])
    # This account's own lookup rate and burst (docs/decisions/0042); None: the top-level setting.
    lookup_rate_per_s: LookupRate | None = None
    lookup_burst: LookupBurst | None = None
    # Stripe Connect: the connected account (``acct_...``) every call acts on (``Stripe-Account``)
    # and whose events (their ``account``) this account takes; None: the platform's own account.
    stripe_account: str | None = Field(default=None, pattern=r"^acct_[A-Za-z0-9]+$")
    # How a Stripe payment is looked up by its reference: the Search API, or, where Search is not
    # available (an older API version, a country without it), by listing the PaymentIntents
    # created since the attempt and matching the metadata reference.
    payment_lookup: Literal["search", "list"] = "search"
    # Where 3-D Secure's redirect flow returns the customer when an order names no ``return_url``
    # (gateway.domain.return_urls; docs/decisions/0078). None: no redirect flow on Stripe unless
    # the order asks for one.
    return_url: str | None = None

    @field_validator("return_url")
    @classmethod
    def _return_url(cls, value: str | None) -> str | None:
        problem = return_url_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(f"return_url {problem}")
        return value

    @model_validator(mode="after")
    def _coherent(self) -> ProviderAccount:
        if not ACCOUNT_ID.match(self.id):
            raise ValueError(f"id {self.id!r} must look like 'provider:account:test|live'")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an absolute http(s) URL")
        for secret in self.webhook_secrets:
            if not secret.get_secret_value().startswith("whsec_"):
                raise ValueError("webhook_secrets entries must start with 'whsec_'")
        for key in self.webhook_public_keys:
            if not key.startswith("whpk_"):
                raise ValueError("webhook_public_keys entries must start with 'whpk_'")
        if self.escalation_safety_margin_s >= self.key_window_s:
            raise ValueError("escalation_safety_margin_s must be smaller than key_window_s")
        if not self.lookup_backoff_s:
            raise ValueError("lookup_backoff_s needs at least one step")
        return self

    @property
    def environment(self) -> Literal["test", "live"]:
        return "live" if self.id.endswith(":live") else "test"


def worst_case_pass_s(account: ProviderAccount) -> float:
    """The longest one recovery pass over an attempt of ``account`` can take: its lookups (and the
    payment-method check) share one call budget, the resend has its own, and recording the
    result has the record budget (gateway/recovery/loop.py enforces each)."""
    return 2 * account.call_budget_s + account.record_budget_s


KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _raw_key(value: str, name: str) -> bytes:
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"{name} must be base64") from None
    if len(raw) != 32:
        raise ValueError(f"{name} must be base64 of exactly 32 bytes")
    return raw


class CertificateKey(_Model):
    """One Ed25519 key for effect certificates (seed 001; API.md ``GET /v1/keys/certificates``).
    The active key signs; retired keys keep only ``public_key`` (or both) so that certificates
    they signed stay verifiable and listed with ``active: false``."""

    key_id: str
    private_key: SecretStr | None = None  # base64 of the raw 32-byte private key
    public_key: str | None = None          # base64 of the raw 32-byte public key
    active: bool = False

    @model_validator(mode="after")
    def _coherent(self) -> CertificateKey:
        if not KEY_ID.match(self.key_id):
            raise ValueError(f"key_id {self.key_id!r} must be 1-64 letters, digits, '.', '_' or '-'")
        if self.private_key is None and self.public_key is None:
            raise ValueError("a certificate key needs private_key or public_key")
        if self.active and self.private_key is None:
            raise ValueError("the active certificate key needs its private_key")
        derived = None if self.private_key is None else Ed25519PrivateKey.from_private_bytes(
            _raw_key(self.private_key.get_secret_value(), "private_key")).public_key().public_bytes_raw()
        if self.public_key is not None and derived is not None and _raw_key(self.public_key, "public_key") != derived:
            raise ValueError("public_key does not belong to private_key")
        if self.public_key is not None:
            _raw_key(self.public_key, "public_key")
        return self

    @property
    def public_bytes(self) -> bytes:
        if self.public_key is not None:
            return _raw_key(self.public_key, "public_key")
        return Ed25519PrivateKey.from_private_bytes(self.private_bytes).public_key().public_bytes_raw()

    @property
    def private_bytes(self) -> bytes:
        if self.private_key is None:
            raise ValueError(f"certificate key {self.key_id} has no private key")
        return _raw_key(self.private_key.get_secret_value(), "private_key")


class Settings(_Model):
    """Everything a paygate process needs, built once by :func:`load_settings`."""

    database_url: str
    redis_url: str
    token_pepper: SecretStr
    log_format: Literal["json", "console"] = "json"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    max_body_bytes: int = Field(default=256 * 1024, gt=0)
    # How long a process remembers the principal behind a bearer token (docs/decisions/0032): a
    # revoked or expired token keeps working for at most this long. 0 looks every token up.
    token_cache_s: float = Field(default=5.0, ge=0, le=300)
    db_pool_size: int = Field(default=8, gt=0, le=200)
    # Notification keys each web process remembers once their recording committed; a redelivery
    # of one is answered 204 without the database (docs/decisions/0064). 0 asks the database always.
    notification_keys_remembered: int = Field(default=100_000, ge=0, le=10_000_000)
    # Group commit of verified notifications (docs/decisions/0073, 0080, 0082), off at 1: at most
    # ingest_batch_lanes recording transactions at once per web process, each taking up to
    # ingest_batch_max of the deliveries that queued while they were busy; with more than
    # ingest_batch_backlog deliveries in flight, a lane beside a busy one opens only once that many
    # wait. A delivery that finds every lane free never waits.
    ingest_batch_max: int = Field(default=16, ge=1, le=256)
    ingest_batch_lanes: int = Field(default=2, ge=1, le=64)
    ingest_batch_backlog: int = Field(default=4, ge=1, le=256)
    # How a batch goes: "pipelined", every matched payment notification's statements sent before
    # any result is read, and any failure redoes each alone; or "savepoints", one after another.
    ingest_batch_mode: Literal["pipelined", "savepoints"] = "pipelined"
    # Worker processes of one web process (docs/decisions/0049): each has its own pool of
    # db_pool_size connections. Up to the cores the gateway gets; 1 serves in the process itself.
    web_workers: int = Field(default=1, gt=0, le=64)
    # Recovery loop, reminders, outbox and the clock process (seed 004).
    recovery_lease_s: Duration = 60
    # Added to the worst-case pass when checking the lease: the clock skew between application
    # hosts and the pass's own short transactions (claim, checks, intent commit).
    recovery_lease_margin_s: Duration = 2
    # Passes one recovery worker runs at once, each on an attempt of its own (docs/decisions/0033).
    recovery_concurrency: int = Field(default=1, gt=0, le=64)
    readonly_cadence_s: Duration = 900
    # Every process's provider lookups (recovery and the pipeline reconciler) share one token bucket
    # per provider account in PostgreSQL, refilled at this rate up to this burst; an account may
    # override both (docs/decisions/0042).
    lookup_rate_per_s: LookupRate = 20
    lookup_burst: LookupBurst = 100
    reminder_interval_s: Duration = 900
    acknowledged_reminder_interval_s: Duration = 3_600
    outbox_backoff_initial_s: Duration = 5
    outbox_backoff_max_s: Duration = 300
    outbox_max_failures: int = Field(default=8, gt=0)
    # How long one outbox delivery may take; the claim's row locks are held that long at most.
    outbox_delivery_budget_s: Duration = 10
    clock_tick_s: Duration = 5
    # Provider-side reconciliation (docs/decisions/0071): the clock starts a run per account this
    # often, over the interval before it plus this overlap (an object at the seam is in both runs).
    reconciliation_interval_s: Duration = 86_400
    reconciliation_overlap_s: Duration = 3_600
    # How often a web process adds the events it counted to the fleet's sums in PostgreSQL
    # (docs/decisions/0041; workers add theirs after every message, every process before a scrape).
    metrics_flush_s: Duration = 5
    # Payouts (seed 000; API.md "Payout timing").
    payout_grant_lead_s: Duration = 300
    payout_grant_window_s: Duration = 1_800
    payout_send_deadline_s: Duration = 300
    provider_skew_s: Duration = 30
    # Downstream sinks (seed 004, "Downstream Work").
    merchant_sink_url: str | None = None
    alert_sink_url: str | None = None
    merchant_signing_secret: SecretStr | None = None
    provider_accounts: list[ProviderAccount] = Field(default_factory=list)
    # Effect certificates (seed 001): at most one active signing key; retired ones still verify.
    certificate_keys: list[CertificateKey] = Field(default_factory=list)

    @model_validator(mode="after")
    def _coherent(self) -> Settings:
        key_ids = [key.key_id for key in self.certificate_keys]
        if len(key_ids) != len(set(key_ids)):
            raise ValueError("certificate_keys key_id values must be unique")
        if sum(key.active for key in self.certificate_keys) > 1:
            raise ValueError("at most one certificate key may be active")
        ids = [account.id for account in self.provider_accounts]
        if len(ids) != len(set(ids)):
            raise ValueError("provider_accounts ids must be unique")
        self._endpoints_are_shared_only_by_connected_accounts()
        if self.outbox_backoff_initial_s > self.outbox_backoff_max_s:
            raise ValueError("outbox_backoff_initial_s must not exceed outbox_backoff_max_s")
        self._lease_outlasts_a_pass()
        return self

    def _endpoints_are_shared_only_by_connected_accounts(self) -> None:
        """One webhook endpoint per account, except a Stripe Connect endpoint: it delivers the
        events of the platform and of its connected accounts (each event's ``account``), signed with
        the endpoint's one secret, so accounts may share it when each names another
        ``stripe_account`` (the platform's own none) and all list the same ``webhook_secrets``."""
        by_endpoint: dict[str, list[ProviderAccount]] = {}
        for account in self.provider_accounts:
            by_endpoint.setdefault(account.webhook_endpoint_id, []).append(account)
        for endpoint, sharing in by_endpoint.items():
            connected = [account.stripe_account for account in sharing]
            if len(connected) != len(set(connected)):
                raise ValueError(f"provider_accounts webhook_endpoint_id values must be unique, unless the accounts "
                                 f"sharing one each name another stripe_account ({endpoint!r})")
            secrets = {tuple(s.get_secret_value() for s in account.webhook_secrets) for account in sharing}
            if len(secrets) > 1:
                raise ValueError(f"provider_accounts sharing webhook_endpoint_id {endpoint!r} must list the same "
                                 "webhook_secrets (one endpoint, one signing secret)")

    def _lease_outlasts_a_pass(self) -> None:
        """Seed 004, "The Recovery Loop": the lease must be longer than the worst case of one pass,
        a lookup plus a send plus recording its result, plus the clock skew between hosts;
        otherwise a slow but healthy pass loses its lease midway. Checked for every account,
        since a pass runs under the budgets of the attempt's own account (docs/decisions/0025)."""
        for index, account in enumerate(self.provider_accounts):
            needed = worst_case_pass_s(account) + self.recovery_lease_margin_s
            if self.recovery_lease_s <= needed:
                raise ValueError(
                    f"recovery_lease_s ({self.recovery_lease_s:g}) must exceed the worst-case recovery pass of "
                    f"provider_accounts.{index} ({account.id}): lookup call_budget_s {account.call_budget_s:g} "
                    f"+ resend call_budget_s {account.call_budget_s:g} + record_budget_s "
                    f"{account.record_budget_s:g} + recovery_lease_margin_s {self.recovery_lease_margin_s:g} "
                    f"= {needed:g}")

    def lookup_limit(self, account: ProviderAccount) -> tuple[float, int]:
        """The lookup rate (per second) and burst of ``account``: its own, else the top-level ones."""
        rate = self.lookup_rate_per_s if account.lookup_rate_per_s is None else account.lookup_rate_per_s
        burst = self.lookup_burst if account.lookup_burst is None else account.lookup_burst
        return rate, burst

    def connected_account(self, endpoint_id: str, provider: str, stripe_account: str | None) -> ProviderAccount | None:
        """The account of ``provider`` on webhook endpoint ``endpoint_id`` that takes the events of
        connected account ``stripe_account`` (None: the platform's own), or None when none is configured."""
        return next((a for a in self.provider_accounts if a.webhook_endpoint_id == endpoint_id
                     and a.id.split(":", 1)[0] == provider and a.stripe_account == stripe_account), None)

    def account(self, account_id: str) -> ProviderAccount | None:
        """The configured account with this id, or None when it is not (or no longer) configured."""
        return next((a for a in self.provider_accounts if a.id == account_id), None)


_ENV_ALIASES = {"database_url": "DATABASE_URL", "redis_url": "REDIS_URL"}


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        key = _ENV_ALIASES.get(name, f"PAYGATE_{name.upper()}")
        if key not in environ:
            continue
        raw = environ[key]
        annotation = str(field.annotation)
        values[name] = json.loads(raw) if name == "provider_accounts" or "list" in annotation else raw
    return values


def _from_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"PAYGATE_CONFIG: cannot read {path}: {exc.strerror}") from exc
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"PAYGATE_CONFIG: {path} is not valid {path.suffix[1:] or 'JSON'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"PAYGATE_CONFIG: {path} must hold an object")
    return data


def _describe(error: ValidationError) -> str:
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "settings"
        lines.append(f"  {where}: {problem['msg']} (got {problem.get('input')!r})"
                     if "input" in problem and not isinstance(problem.get("input"), dict)
                     else f"  {where}: {problem['msg']}")
    return "invalid configuration:\n" + "\n".join(lines)


def build_settings(values: Mapping[str, Any]) -> Settings:
    """Validate ``values`` into Settings, or raise ConfigError naming each bad setting."""
    try:
        return Settings.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Defaults, then ``PAYGATE_CONFIG``'s file, then the environment, then ``overrides``."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    if env.get("PAYGATE_CONFIG"):
        values.update(_from_file(Path(env["PAYGATE_CONFIG"])))
    try:
        values.update(_from_environment(env))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid configuration: a JSON-valued environment variable is not JSON: {exc}") from None
    values.update(overrides)
    return build_settings(values)
