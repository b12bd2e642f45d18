"""The demo world ``paygate up`` runs: two CardCo accounts and a Stripe test account (served by the
fake's Stripe dialect, ``/stripe/v1/...``), their keys and webhook secrets, the timings
(normal or ``--rehearsal``; CardCo's listing lag, one value for the fake and the gateway), demo
tokens for every role, a customer with an open order.

Secrets are generated once per data directory and kept in ``secrets.json`` (mode 0600), so a
restarted demo keeps verifying the webhooks its CardCo signs.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gateway.auth.tokens import Tokens
from gateway.clock import Clock
from gateway.payouts import reference
from gateway.store.db import Database

# API.md, Command line: the two CardCo accounts first, then the Stripe one.
ACCOUNTS = ("cardco:acct_store:test", "cardco:acct_store:live", "stripe:acct_store:test")
# The Stripe API version the demo pins its Stripe account to (the fake renders every version alike).
STRIPE_API_VERSION = "2026-10-28.endive"
STRIPE_MOUNT = "/stripe"
CUSTOMER_ID = "cus_demo"
TENANT_ID = "T-0417"
DEMO_ORDER_ID = "ORD-DEMO-1"
# Seed 000's payout world: a verified Active beneficiary and its destination, registered more than
# 7 days ago so the demo's first payout is not "recently changed" (API.md, "Precise details").
BENEFICIARY_ID = "BEN-2208"
DESTINATION_ID = "DST-77"

# API.md, Command line: "--rehearsal uses short timings ... with exactly these values".
REHEARSAL_GLOBAL = {
    "recovery_lease_s": 12, "reminder_interval_s": 10, "acknowledged_reminder_interval_s": 30,
    "outbox_backoff_initial_s": 1, "outbox_backoff_max_s": 8, "outbox_max_failures": 5,
    "clock_tick_s": 1, "readonly_cadence_s": 8,
    "payout_grant_lead_s": 5, "payout_grant_window_s": 60, "payout_send_deadline_s": 20,
    "provider_skew_s": 30,
}
# CardCo's listing lag (API.md: its lists "may lag behind writes by a configured visibility
# delay"): ONE value configures the fake (``visibility_delay_s``) and the gateway's
# CardCo accounts (``visibility_delay_s``), so the NotApplied cutoff waits out exactly the lag the
# provider has. It equals the processing allowance that stood for the lag before (10 s; 2 s in
# rehearsal). The Stripe account keeps Stripe's documented 60 s, longer than the fake's lag.
VISIBILITY_DELAY_S = {False: 10.0, True: 2.0}
REHEARSAL_ACCOUNT = {
    "abandonment_threshold_s": 2, "call_budget_s": 3, "record_budget_s": 2, "start_budget_s": 2,
    "maximum_call_duration_s": 5, "processing_allowance_s": 2, "lookup_backoff_s": [1, 2, 4, 8],
    "key_window_s": 120, "escalation_safety_margin_s": 30,
}


@dataclass(frozen=True)
class Urls:
    gateway: str
    provider: str
    sinks: str

    @property
    def control(self) -> str:
        return f"{self.provider}/_control"

    @property
    def merchant_sink(self) -> str:
        return f"{self.sinks}/merchant"

    @property
    def alert_sink(self) -> str:
        return f"{self.sinks}/alerts"

    @property
    def shop(self) -> str:
        """The reference checkout page, served with the merchant's sink (paygate_local.shop)."""
        return f"{self.sinks}/demo/shop"


def _provider(account_id: str) -> str:
    return account_id.split(":", 1)[0]


def _endpoint_id(account_id: str) -> str:
    """``cardco-test``, ``cardco-live``, ``stripe-test``."""
    return f"{_provider(account_id)}-{account_id.rsplit(':', 1)[1]}"


def _new_account_secrets(account_id: str) -> dict[str, str]:
    environment = account_id.rsplit(":", 1)[1]
    if _provider(account_id) == "stripe":
        # Stripe's shapes: a secret key, and an endpoint secret used as it is (no Ed25519 key).
        return {"api_key": f"sk_{environment}_{secrets.token_urlsafe(24)}",
                "webhook_secret": "whsec_" + secrets.token_urlsafe(32)}
    return {
        "api_key": f"ck_{environment}_{secrets.token_urlsafe(24)}",
        "webhook_secret": "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(),
        "signing_seed": base64.b64encode(secrets.token_bytes(32)).decode(),
    }


def load_or_create_secrets(data_dir: Path) -> dict[str, Any]:
    """The data directory's secrets, created on first use with owner-only permissions."""
    path = data_dir / "secrets.json"
    if path.exists():
        stored: dict[str, Any] = json.loads(path.read_text())
        return _with_new_accounts(_with_certificate_key(stored, data_dir), data_dir)
    created = {
        "token_pepper": secrets.token_urlsafe(32),
        # Effect certificates (seed 001): the demo's signing key, "demo-1" in GET /v1/keys/certificates.
        "certificate_key": base64.b64encode(secrets.token_bytes(32)).decode(),
        "merchant_signing_secret": "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(),
        "accounts": {account: _new_account_secrets(account) for account in ACCOUNTS},
    }
    path.touch(mode=0o600)
    path.write_text(json.dumps(created, indent=2))
    return created


def _with_certificate_key(stored: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """Secrets written before certificates existed get their key now, once."""
    if "certificate_key" in stored:
        return stored
    stored = {**stored, "certificate_key": base64.b64encode(secrets.token_bytes(32)).decode()}
    (data_dir / "secrets.json").write_text(json.dumps(stored, indent=2))
    return stored


def _with_new_accounts(stored: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """Secrets written before an account joined the demo (the Stripe one) get its secrets now, once."""
    missing = [account for account in ACCOUNTS if account not in stored["accounts"]]
    if not missing:
        return stored
    stored = {**stored, "accounts": {**stored["accounts"], **{a: _new_account_secrets(a) for a in missing}}}
    (data_dir / "secrets.json").write_text(json.dumps(stored, indent=2))
    return stored


def public_key(seed_b64: str) -> str:
    """The ``whpk_`` public key for an Ed25519 signing seed (Standard Webhooks v1a)."""
    key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(seed_b64)).public_key()
    return "whpk_" + base64.b64encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def _public_keys(account_secrets: dict[str, str]) -> list[str]:
    """A CardCo account's ``whpk_`` key (Standard Webhooks v1a); Stripe signs with its secret only."""
    return [public_key(account_secrets["signing_seed"])] if "signing_seed" in account_secrets else []


def gateway_config(stored: dict[str, Any], urls: Urls, *, rehearsal: bool) -> dict[str, Any]:
    """The gateway's PAYGATE_CONFIG document (everything but the server URLs)."""
    accounts = []
    for account_id in ACCOUNTS:
        account_secrets = stored["accounts"][account_id]
        stripe = _provider(account_id) == "stripe"
        accounts.append({
            "id": account_id,
            "base_url": urls.provider + STRIPE_MOUNT if stripe else urls.provider,
            "api_key": account_secrets["api_key"],
            **({"api_version": STRIPE_API_VERSION} if stripe else {}),
            "webhook_endpoint_id": _endpoint_id(account_id),
            "webhook_secrets": [account_secrets["webhook_secret"]],
            "webhook_public_keys": _public_keys(account_secrets),
            **({} if stripe else {"visibility_delay_s": VISIBILITY_DELAY_S[rehearsal]}),
            **(REHEARSAL_ACCOUNT if rehearsal else {}),
        })
    return {
        "token_pepper": stored["token_pepper"],
        "merchant_sink_url": urls.merchant_sink,
        "alert_sink_url": urls.alert_sink,
        "merchant_signing_secret": stored["merchant_signing_secret"],
        "provider_accounts": accounts,
        "certificate_keys": [{"key_id": "demo-1", "private_key": stored["certificate_key"], "active": True}],
        **(REHEARSAL_GLOBAL if rehearsal else {}),
    }


def cardco_config(stored: dict[str, Any], urls: Urls, *, rehearsal: bool) -> dict[str, Any]:
    """The CardCo fake's CARDCO_CONFIG document: the same accounts, delivering to the gateway."""
    return {
        "accounts": [{
            "id": account_id,
            "api_key": stored["accounts"][account_id]["api_key"],
            "webhook_url": f"{urls.gateway}/v1/webhooks/{_endpoint_id(account_id)}",
            "webhook_secrets": [stored["accounts"][account_id]["webhook_secret"]],
            **({"dialect": "stripe", "api_version": STRIPE_API_VERSION} if _provider(account_id) == "stripe" else
               {"webhook_signing_key": stored["accounts"][account_id]["signing_seed"]}),
        } for account_id in ACCOUNTS],
        "visibility_delay_s": VISIBILITY_DELAY_S[rehearsal],
        **({"processing_complete_after_s": 2, "webhook_retry_schedule_s": [1, 2, 4, 8]} if rehearsal else {}),
    }


_DEMO_ORDER = """
INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method,
                    provider_account, state, created_at, updated_at)
VALUES (%(order_id)s, 'merchant_demo', %(customer_id)s, 4250, 'EUR', 'pm_card_visa',
        'cardco:acct_store:test', 'Open', %(now)s, %(now)s)
ON CONFLICT (order_id) DO NOTHING
"""


async def seed(db: Database, clock: Clock, pepper: str) -> dict[str, str]:
    """Create one token per demo role and the customer's open order; return the tokens."""
    tokens = Tokens(db, clock, pepper)
    created = {
        "merchant": await tokens.create("merchant", "merchant_demo"),
        "customer": await tokens.create("customer", CUSTOMER_ID),
        "operator": await tokens.create("operator", "op_demo"),
        "clerk": await tokens.create("clerk", "clerk_demo", tenant_id=TENANT_ID, approval_limit_minor=500_000),
        "approver": await tokens.create("clerk", "approver_demo", tenant_id=TENANT_ID,
                                        approval_limit_minor=100_000_000),
        "admin": await tokens.create("admin", "admin_demo"),
    }
    async with db.transaction() as conn:
        await conn.execute(_DEMO_ORDER, {"order_id": DEMO_ORDER_ID, "customer_id": CUSTOMER_ID, "now": clock.now()})
    await seed_payouts(db, clock)
    return created


async def seed_payouts(db: Database, clock: Clock) -> None:
    """T-0417 (daily limit 50,000.00 EUR, Europe/Berlin), BEN-2208, DST-77 and a published
    payout.submit policy release. Idempotent: a restarted demo moves no version."""
    now = clock.now()
    await reference.upsert_tenant(db, now, TENANT_ID, daily_limit_minor=5_000_000, currency="EUR",
                                  payouts_suspended=False, settlement_time_zone="Europe/Berlin")
    await reference.upsert_beneficiary(db, now, BENEFICIARY_ID, tenant_id=TENANT_ID, verified=True, status="Active")
    await reference.upsert_destination(db, now - timedelta(days=8), DESTINATION_ID, beneficiary_id=BENEFICIARY_ID,
                                       provider_token="dst_tok_demo_2208", actor="demo")
    await reference.publish_policy(db, now, "payout.submit", "payout-policy/2026.10")


def demo_document(stored: dict[str, Any], urls: Urls, tokens: dict[str, str],
                  effective: dict[str, Any]) -> dict[str, Any]:
    """``paygate-demo.json`` exactly as API.md, Command line, describes it."""
    return {
        "gateway_url": urls.gateway,
        "provider_url": urls.provider,
        "control_url": urls.control,
        "tokens": tokens,
        "customer_id": CUSTOMER_ID,
        "tenant_id": TENANT_ID,
        "beneficiary_id": BENEFICIARY_ID,
        "destination_id": DESTINATION_ID,
        "demo_order_id": DEMO_ORDER_ID,
        "provider_accounts": [{
            "id": account_id,
            "api_key": stored["accounts"][account_id]["api_key"],
            "webhook_endpoint_id": _endpoint_id(account_id),
            "webhook_secret": stored["accounts"][account_id]["webhook_secret"],
            "webhook_public_key": next(iter(_public_keys(stored["accounts"][account_id])), None),
        } for account_id in ACCOUNTS],
        "merchant_sink_url": urls.merchant_sink,
        "alert_sink_url": urls.alert_sink,
        "shop_url": urls.shop,
        "settings": effective,
    }


def write_private_json(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` atomically, readable by the owner only (it holds tokens and secrets)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.touch(mode=0o600)
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, path)
