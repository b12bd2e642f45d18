"""Canonical execution manifests: what one attempt will send, as the JSON its digest commits to
(seed 001, "The intent record": ``M := canonical_execution_manifest(approved)``,
``d := SHA256(JCS(M))``; "Stable identity and exact bytes").

A manifest names the rail and provider account, the endpoint, the API version, the operation, the
idempotency key, the client reference, the amount and currency, and the request's business fields.
It is derived from what a send will actually carry, so re-deriving it at send time and comparing
digests proves the send is the committed intent and not an improvised one:

- a checkout attempt's manifest comes from its stored request (endpoint, key, exact body); it also
  holds the SHA-256 of the exact body bytes, so even a whitespace change is a different effect;
- a payout attempt's manifest comes from the body the executor is about to send, with the
  destination named by id and version and NEVER by its token (DESIGN invariant 8);
- a payout recall attempt's manifest (operation ``payout.recall``, docs/decisions/0015) comes from
  the recall body about to be sent (client reference, ``expires_at`` = the send deadline, as for a
  payout), plus the provider payout id being recalled and the amount and currency it pulls back;
- a payment refund attempt's manifest (operation ``payment.refund``, docs/decisions/0019) likewise
  from the refund body, plus the provider payment id refunded and the amount and currency returned.

Amounts are decimal strings: API amounts reach 2^63-1, beyond the I-JSON integers RFC 8785 allows.
Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gateway.domain.attempt_kinds import PAYMENT, PAYMENT_REFUND, PAYOUT, PAYOUT_RECALL
from gateway.domain.canonical import digest

MANIFEST_VERSION = "paygate.effect-manifest/1"
# The name of a registered attempt kind (gateway.domain.attempt_kinds.KINDS).
AttemptKind = str
RECALL_OPERATION = "payout.recall"
REFUND_OPERATION = "payment.refund"


class ManifestUnbuildable(ValueError):
    """The stored request cannot be read as the effect it claims to be."""


@dataclass(frozen=True)
class Transport:
    """Where and how a request goes: fixed for the attempt's life."""

    provider_account: str  # 'cardco:acct_store:test'
    endpoint: str
    api_version: str
    idempotency_key: str

    @property
    def rail(self) -> str:
        return self.provider_account.split(":", 1)[0]


def json_fields(body: bytes) -> dict[str, Any]:
    """The business fields of a JSON request body (CardCo's encoding)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ManifestUnbuildable("the request body is not JSON") from None
    if not isinstance(parsed, dict):
        raise ManifestUnbuildable("the request body is not a JSON object")
    return parsed


def _manifest(kind: AttemptKind, operation: str, transport: Transport, business: dict[str, Any]) -> dict[str, Any]:
    missing = [name for name in ("client_reference", "amount_minor", "currency") if name not in business]
    if missing or not isinstance(business["amount_minor"], int) or isinstance(business["amount_minor"], bool):
        raise ManifestUnbuildable(f"the request lacks a usable {', '.join(missing) or 'amount_minor'}")
    return {
        "manifest_version": MANIFEST_VERSION, "attempt_kind": kind, "rail": transport.rail,
        "provider_account": transport.provider_account, "endpoint": transport.endpoint,
        "api_version": transport.api_version, "operation": operation,
        "idempotency_key": transport.idempotency_key, "client_reference": business["client_reference"],
        "amount_minor": str(business["amount_minor"]), "currency": business["currency"],
        "business_fields": {name: str(value) if name == "amount_minor" else value for name, value in business.items()},
    }


def _fields(body: bytes | dict[str, Any]) -> dict[str, Any]:
    """A body's business fields: read from JSON bytes, or already read by the provider's adapter
    from its own encoding (``gateway.providers``: ``Operation.fields``) into the common names."""
    return dict(body) if isinstance(body, dict) else json_fields(body)


def payment_manifest(transport: Transport, request_body: str,
                     fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """A checkout attempt's manifest, from its stored request (``payment_attempts.request_body``
    holds a payment-method token, never card data); ``fields`` when the provider's adapter read it."""
    exact = request_body.encode("utf-8")
    manifest = _manifest(PAYMENT.name, "create_payment", transport, dict(fields) if fields is not None
                         else json_fields(exact))
    manifest["body_sha256"] = hashlib.sha256(exact).hexdigest()
    return manifest


def payout_manifest(transport: Transport, body: bytes | dict[str, Any], *, destination_id: str,
                    destination_version: int) -> dict[str, Any]:
    """A payout attempt's manifest, from the exact body about to be sent, without its token."""
    business = _fields(body)
    if not isinstance(business.pop("destination_token", None), str):
        raise ManifestUnbuildable("the request names no destination token")
    business["destination"] = {"destination_id": destination_id, "destination_version": destination_version}
    return _manifest(PAYOUT.name, "create_payout", transport, business)


def recall_manifest(transport: Transport, body: bytes | dict[str, Any], *, provider_payout_id: str, amount_minor: int,
                    currency: str) -> dict[str, Any]:
    """A payout recall attempt's manifest, from the exact recall body about to be sent. The body
    names the recall by reference and ``expires_at`` only; the recalled provider payout id (also
    in the endpoint) and the amount and currency pulled back come from the attempt. A body naming
    a destination token is refused: a recall never carries one."""
    business = _fields(body)
    if "destination_token" in business:
        raise ManifestUnbuildable("a recall request must not name a destination token")
    if "expires_at" not in business or not isinstance(business["expires_at"], str | None):
        # None: the provider enforces no request expiry and the adapter says so (docs/decisions/0047).
        raise ManifestUnbuildable("the recall request names no expires_at")
    business.update(provider_payout_id=provider_payout_id, amount_minor=amount_minor, currency=currency)
    return _manifest(PAYOUT_RECALL.name, RECALL_OPERATION, transport, business)


def refund_manifest(transport: Transport, body: bytes | dict[str, Any], *, provider_payment_id: str, amount_minor: int,
                    currency: str) -> dict[str, Any]:
    """A payment refund attempt's manifest, from the exact refund body about to be sent (its
    reference and ``expires_at``); the refunded provider payment id (also in the endpoint) and the
    full amount and currency come from the attempt. A refund names no payment method or token."""
    business = _fields(body)
    if {"payment_method", "destination_token"} & business.keys():
        raise ManifestUnbuildable("a refund request names no payment method or token")
    if "expires_at" not in business or not isinstance(business["expires_at"], str | None):
        # None: the provider enforces no request expiry and the adapter says so (docs/decisions/0047).
        raise ManifestUnbuildable("the refund request names no expires_at")
    business.update(provider_payment_id=provider_payment_id, amount_minor=amount_minor, currency=currency)
    return _manifest(PAYMENT_REFUND.name, REFUND_OPERATION, transport, business)


def refund_policy_document(decision: dict[str, Any]) -> dict[str, Any]:
    """What a refund's ``policy_digest`` commits to: its own Allowed decision (policy version,
    cause, reason, the order version evaluated and the provider payment id it allows refunding)."""
    return {"decision_id": str(decision["decision_id"]), "operation": decision["operation"],
            "cause": decision["cause"], "outcome": decision["outcome"], "reason": decision["reason"],
            "policy_version": decision["policy_version"],
            "evaluated_order_version": decision["evaluated_order_version"],
            "provider_payment_id": decision["provider_payment_id"]}


def refund_approval_set_document(decision: dict[str, Any]) -> dict[str, Any]:
    """What a refund's ``approval_set_digest`` commits to: who asked (the merchant, or the
    cancellation itself for a payment after cancel); a refund needs no further approval."""
    return {"requester_id": decision["actor_id"], "approvals": [], "acknowledgments": []}


def recall_policy_document(decision: dict[str, Any]) -> dict[str, Any]:
    """What a recall's ``policy_digest`` commits to: its own Allowed decision (policy version,
    reason, the payout version evaluated and the provider payout id it allows recalling)."""
    return {"decision_id": str(decision["decision_id"]), "operation": decision["operation"],
            "outcome": decision["outcome"], "reason": decision["reason"],
            "policy_version": decision["policy_version"],
            "evaluated_payout_version": decision["evaluated_payout_version"],
            "provider_payout_id": decision["provider_payout_id"]}


def recall_approval_set_document(decision: dict[str, Any]) -> dict[str, Any]:
    """What a recall's ``approval_set_digest`` commits to: the requesting clerk alone (a recall
    needs no acknowledgment or approval, docs/decisions/0015 choice 4)."""
    return {"requester_id": decision["actor_id"], "approvals": [], "acknowledgments": []}


def effect_digest(manifest: dict[str, Any]) -> bytes:
    return digest(manifest)


def policy_document(decision: dict[str, Any]) -> dict[str, Any]:
    """What ``policy_digest`` commits to: the allowing decision's policy version and reason."""
    return {"decision_id": str(decision["decision_id"]), "operation": decision["operation"],
            "outcome": decision["outcome"], "reason": decision["reason"],
            "policy_version": decision["policy_version"], "terms_fingerprint": decision["terms_fingerprint"]}


def approval_set_document(decision: dict[str, Any], requester_id: str,
                          acknowledgments: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``approval_set_digest`` commits to: the acknowledgments and approvals behind the
    allowing decision. An approval is that decision made by someone other than the requester
    (API.md: ``approve`` is a fresh decision under the approver); acknowledgments are ordered by
    id, since RFC 8785 orders object keys but never array elements."""
    approvals = [] if decision["actor_id"] == requester_id else [
        {"decision_id": str(decision["decision_id"]), "approver_id": decision["actor_id"],
         "approval_limit_minor": None if decision["approval_limit_minor"] is None
         else str(decision["approval_limit_minor"])}]
    return {"requester_id": requester_id, "approvals": approvals, "acknowledgments": [
        {"acknowledgment_id": ack["acknowledgment_id"], "reason_code": ack["reason_code"],
         "destination_version": ack["destination_version"], "acknowledged_by": ack["acknowledged_by"]}
        for ack in sorted(acknowledgments, key=lambda ack: int(ack["acknowledgment_id"]))]}
