"""Effect records for payout recall attempts (seed 001 applied to docs/decisions/0015's attempts).

A recall is its own consequential operation (``payout.recall``), so it gets its own record,
persisted inside the recall's atomic claim (the transaction that creates the Claimed attempt), from
the very recall body the executor will send: the client reference and ``expires_at`` (the send
deadline, committed as the payout manifest commits its own), the provider payout id being recalled
(also the endpoint's path) and the idempotency key; never a destination token. ``policy_digest``
commits to the recall's own Allowed decision, ``approval_set_digest`` to its requesting clerk.
Every send (the first and each bounded same-key resend) passes :func:`open_recall_send` first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.domain.canonical import digest
from gateway.domain.effect_manifest import (
    AttemptKind,
    Transport,
    recall_approval_set_document,
    recall_manifest,
    recall_policy_document,
)
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.effects.gate import SendGate
from gateway.payouts.cardco import recall_body, recall_path
from gateway.settings import ProviderAccount
from gateway.store.db import Connection, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")
KIND: AttemptKind = "payout_recall"


def recall_intent(attempt: dict[str, Any], account: ProviderAccount, *, policy_digest: bytes | None = None,
                  approval_set_digest: bytes | None = None) -> ledger.Intent:
    transport = Transport(account.id, account.base_url.rstrip("/") + recall_path(attempt["provider_payout_id"]),
                          account.api_version, attempt["idempotency_key"])
    manifest = recall_manifest(transport, recall_body(attempt), provider_payout_id=attempt["provider_payout_id"],
                               amount_minor=attempt["amount_minor"], currency=attempt["currency"])
    return ledger.Intent(KIND, attempt["attempt_id"], transport, manifest, policy_digest, approval_set_digest)


async def persist_recall(conn: Connection, attempt: dict[str, Any], *, account: ProviderAccount, now: datetime,
                         actor: str, reminder_interval_s: float) -> bool:
    """Persist the claimed recall attempt's record with its governance digests and the ledger of
    the recall decision behind it: PROPOSED, POLICY_EVALUATED, APPROVED, INTENT_PERSISTED."""
    decision = await fetch_one(conn, _SQL["recall_governance"], {"decision_id": attempt["decision_id"]})
    if decision is None:
        raise LookupError(f"recall decision {attempt['decision_id']} does not exist")
    intent = recall_intent(attempt, account, policy_digest=digest(recall_policy_document(decision)),
                           approval_set_digest=digest(recall_approval_set_document(decision)))
    decision_id = str(decision["decision_id"])
    prelude: list[ledger.Step] = [
        (ProtocolState.PROPOSED, {"payout_id": attempt["payout_id"], "operation": decision["operation"]}),
        (ProtocolState.POLICY_EVALUATED, {"decision_id": decision_id, "policy_version": decision["policy_version"]}),
        (ProtocolState.APPROVED, {"decision_id": decision_id, "actor_id": decision["actor_id"]}),
    ]
    return await ledger.persist(conn, intent, prelude=prelude, actor=actor, now=now,
                                reminder_interval_s=reminder_interval_s)


async def open_recall_send(gate: SendGate, attempt: dict[str, Any], account: ProviderAccount, *,
                           actor: str) -> str | None:
    """None when this recall send may go; else why not: the request it makes must be the committed
    effect (the same recalled payout, reference, ``expires_at`` and key)."""
    return await gate.open(KIND, attempt["attempt_id"], lambda: recall_intent(attempt, account), actor=actor)
