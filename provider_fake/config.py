"""CardCo's accounts and timings.

API.md "provider_fake: CardCo": keys are scoped per account and environment, and webhooks go
to the URLs configured per account, signed with that account's secrets. The JSON shape is
documented in docs/rehearsing-incidents.md; `uvicorn provider_fake.app:app` reads it from the
file named by `CARDCO_CONFIG`.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import re
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

CONFIG_ENV = "CARDCO_CONFIG"


# The API version a Stripe-dialect account is pinned to unless it says otherwise: the one the
# official `stripe` package of the test extras sends (docs/decisions/0044).
STRIPE_API_VERSION = "2026-10-28.endive"
# Between a Stripe account's id and the connected account it acts for (Account.connected_as).
CONNECTED = "/"


class Account(BaseModel):
    """One account in one environment, e.g. `cardco:acct_store:test`.

    `dialect` says which mount the account talks to: `cardco` (`/v1/...`, the default) or
    `stripe` (`/stripe/v1/...`, docs/rehearsing-incidents.md "Stripe dialect"). A Stripe account
    is found by its secret key alone, renders its events in `api_version` and sends only its
    `enabled_events` (`*`: every event) to its webhook endpoint.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    api_key: str = Field(min_length=1)
    dialect: Literal["cardco", "stripe"] = "cardco"
    webhook_url: str | None = None
    webhook_secrets: list[str] = Field(default_factory=list)
    webhook_signing_key: str | None = None
    api_version: str = STRIPE_API_VERSION
    enabled_events: list[str] = Field(default_factory=lambda: ["*"])

    @field_validator("webhook_url")
    @classmethod
    def _url_is_absolute_http(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", url):
            raise ValueError("webhook_url must be an absolute http(s) URL")
        return url

    @model_validator(mode="after")
    def _secrets_fit_the_dialect(self) -> Account:
        """CardCo's secrets are `whsec_<base64 of the key bytes>`; Stripe's are `whsec_...` used
        as they are (the key is the secret's UTF-8 bytes), and Stripe signs with no Ed25519 key."""
        for secret in self.webhook_secrets:
            if not secret.startswith("whsec_") or secret == "whsec_":
                raise ValueError("webhook secrets are whsec_...")
            if self.dialect == "cardco":
                base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        if self.dialect == "stripe" and self.webhook_signing_key is not None:
            raise ValueError("a stripe account signs with its webhook secrets only")
        return self

    @field_validator("webhook_signing_key")
    @classmethod
    def _signing_key_is_a_seed(cls, key: str | None) -> str | None:
        if key is not None and len(base64.b64decode(key, validate=True)) != 32:
            raise ValueError("webhook_signing_key is the base64 of a 32-byte Ed25519 seed")
        return key

    def connected_as(self, connected_account: str) -> Account:
        """This Stripe account acting for its connected account `acct_...` (Stripe Connect's
        `Stripe-Account` header): its own id `<id>/<acct_...>` scopes the objects, idempotency keys,
        lists and searches to the connected account, while the keys, secrets, version and webhook
        endpoint stay the platform's (a Connect endpoint; events carry `account`)."""
        return self.model_copy(update={"id": f"{self.id}{CONNECTED}{connected_account}"})

    @property
    def connected_account(self) -> str | None:
        """The connected account this account acts for, or None (the platform itself)."""
        return self.id.partition(CONNECTED)[2] or None

    def accepts_key(self, api_key: str) -> bool:
        return hmac.compare_digest(self.api_key.encode(), api_key.encode())

    @property
    def livemode(self) -> bool:
        """Stripe: live objects are those made with a live key (`sk_live_...`)."""
        return self.api_key.startswith(("sk_live_", "rk_live_"))

    def sends(self, event_type: str) -> bool:
        """Whether the webhook endpoint has this event type enabled."""
        return "*" in self.enabled_events or event_type in self.enabled_events

    def signing_key(self) -> Ed25519PrivateKey | None:
        if self.webhook_signing_key is None:
            return None
        return Ed25519PrivateKey.from_private_bytes(base64.b64decode(self.webhook_signing_key))

    def webhook_public_key(self) -> str | None:
        """`whpk_<base64 of the raw 32-byte public key>`, what a receiver configures for v1a."""
        key = self.signing_key()
        if key is None:
            return None
        raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return "whpk_" + base64.b64encode(raw).decode()


class CardCoConfig(BaseModel):
    """Every account and timing of one CardCo instance; times are in the fake clock's seconds."""

    model_config = ConfigDict(extra="forbid")

    accounts: list[Account] = Field(default_factory=list)
    visibility_delay_s: float = Field(default=0, ge=0)
    idempotency_retention_s: float = Field(default=86400, gt=0)
    request_expiry_skew_s: float = Field(default=30, ge=0)
    processing_complete_after_s: float = Field(default=2, ge=0)
    payout_recall_window_s: float = Field(default=86400, gt=0)  # extension: a paid payout is recallable this long
    requires_action_expires_in_s: float = Field(default=600, gt=0)
    webhook_retry_schedule_s: list[float] = Field(default_factory=lambda: [1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    webhook_timeout_s: float = Field(default=5, gt=0)

    @model_validator(mode="after")
    def _account_ids_are_unique(self) -> CardCoConfig:
        ids = [account.id for account in self.accounts]
        if len(ids) != len(set(ids)):
            raise ValueError("account ids must be unique")
        return self

    def account(self, account_id: str) -> Account | None:
        """The account with this id; `<stripe account id>/<acct_...>` is that Stripe account acting
        for one of its connected accounts (`Account.connected_as`)."""
        platform, _, connected = account_id.partition(CONNECTED)
        found = next((a for a in self.accounts if a.id == platform), None)
        if found is None or not connected:
            return found
        return found.connected_as(connected) if found.dialect == "stripe" else None

    def account_with_key(self, dialect: str, api_key: str) -> Account | None:
        """The account of `dialect` whose key this is (Stripe names no account: the key does)."""
        return next((a for a in self.accounts if a.dialect == dialect and a.accepts_key(api_key)), None)


def demo_config() -> CardCoConfig:
    """Two CardCo accounts, test and live, and a Stripe-dialect test account, each with its own
    key and secret; no webhook URL."""
    return CardCoConfig(
        accounts=[
            Account(
                id="cardco:acct_store:test",
                api_key="ck_test_demo",
                webhook_secrets=["whsec_" + base64.b64encode(b"cardco-demo-test-secret!").decode()],
            ),
            Account(
                id="cardco:acct_store:live",
                api_key="ck_live_demo",
                webhook_secrets=["whsec_" + base64.b64encode(b"cardco-demo-live-secret!").decode()],
            ),
            Account(
                id="stripe:acct_store:test",
                api_key="sk_test_demo",
                dialect="stripe",
                webhook_secrets=["whsec_stripe_demo_test_secret"],
            ),
        ]
    )


def config_from_env() -> CardCoConfig:
    """The config file named by CARDCO_CONFIG, else the built-in demo config."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return demo_config()
    return CardCoConfig.model_validate(json.loads(Path(path).read_text()))
