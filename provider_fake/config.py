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

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

CONFIG_ENV = "CARDCO_CONFIG"


class Account(BaseModel):
    """One CardCo account in one environment, e.g. `cardco:acct_store:test`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    api_key: str = Field(min_length=1)
    webhook_url: str | None = None
    webhook_secrets: list[str] = Field(default_factory=list)
    webhook_signing_key: str | None = None

    @field_validator("webhook_url")
    @classmethod
    def _url_is_absolute_http(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", url):
            raise ValueError("webhook_url must be an absolute http(s) URL")
        return url

    @field_validator("webhook_secrets")
    @classmethod
    def _secrets_are_whsec(cls, secrets: list[str]) -> list[str]:
        for secret in secrets:
            if not secret.startswith("whsec_"):
                raise ValueError("webhook secrets are whsec_<base64>")
            base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        return secrets

    @field_validator("webhook_signing_key")
    @classmethod
    def _signing_key_is_a_seed(cls, key: str | None) -> str | None:
        if key is not None and len(base64.b64decode(key, validate=True)) != 32:
            raise ValueError("webhook_signing_key is the base64 of a 32-byte Ed25519 seed")
        return key

    def accepts_key(self, api_key: str) -> bool:
        return hmac.compare_digest(self.api_key.encode(), api_key.encode())

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
        return next((a for a in self.accounts if a.id == account_id), None)


def demo_config() -> CardCoConfig:
    """Two accounts, test and live, with their own keys and secrets; no webhook URL."""
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
        ]
    )


def config_from_env() -> CardCoConfig:
    """The config file named by CARDCO_CONFIG, else the built-in demo config."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return demo_config()
    return CardCoConfig.model_validate(json.loads(Path(path).read_text()))
