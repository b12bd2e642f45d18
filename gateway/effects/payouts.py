"""Effect records for payout attempts (seed 001 applied to seed 000's attempts).

The record is persisted inside the atomic claim, the transaction that creates the Claimed attempt
(the payout's sendable form), from the very body the executor will send, with the destination
named by id and version and never by token. ``policy_digest`` commits to the allowing decision's
policy version and reason, ``approval_set_digest`` to the acknowledgments and approvals behind it.
Every send (the first and each bounded same-key resend) passes :func:`open_send` first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.domain.canonical import digest
from gateway.domain.effect_manifest import (
    ManifestUnbuildable,
    Transport,
    approval_set_document,
    payout_manifest,
    policy_document,
)
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.effects.gate import SendGate
from gateway.payouts.cardco import destination_digest, request_body
from gateway.settings import ProviderAccount
from gateway.store.db import Connection, fetch_all, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")
PAYOUTS_PATH = "/v1/payouts"
PENDING = ("AcknowledgmentRequired", "EscalationRecommended")


def payout_intent(attempt: dict[str, Any], account: ProviderAccount, token: str, *,
                  policy_digest: bytes | None = None, approval_set_digest: bytes | None = None) -> ledger.Intent:
    transport = Transport(account.id, account.base_url.rstrip("/") + PAYOUTS_PATH, account.api_version,
                          attempt["idempotency_key"])
    manifest = payout_manifest(transport, request_body(attempt, token), destination_id=attempt["destination_id"],
                               destination_version=attempt["destination_version"])
    return ledger.Intent("payout", attempt["attempt_id"], transport, manifest, policy_digest, approval_set_digest)


async def persist_payout(conn: Connection, attempt: dict[str, Any], token: str, *, account: ProviderAccount,
                         now: datetime, actor: str, reminder_interval_s: float) -> bool:
    """Persist the claimed attempt's record, with its governance digests and the ledger of the
    decisions behind it: PROPOSED, POLICY_EVALUATED, PENDING_APPROVAL when this authorization round
    needed an acknowledgment or approval, APPROVED, INTENT_PERSISTED."""
    decision = await fetch_one(conn, _SQL["payout_governance"], {"decision_id": attempt["decision_id"]})
    if decision is None:
        raise LookupError(f"decision {attempt['decision_id']} does not exist")
    acknowledgments = await fetch_all(conn, _SQL["payout_acknowledgments"], {
        "payout_id": attempt["payout_id"], "destination_version": attempt["destination_version"]})
    intent = payout_intent(attempt, account, token, policy_digest=digest(policy_document(decision)),
                           approval_set_digest=digest(approval_set_document(decision, decision["requester_id"],
                                                                            acknowledgments)))
    first = decision["round"][0]["decision_id"] if decision["round"] else str(decision["decision_id"])
    pending = [row["decision_id"] for row in decision["round"] if row["outcome"] in PENDING]
    prelude: list[ledger.Step] = [
        (ProtocolState.PROPOSED, {"payout_id": attempt["payout_id"]}),
        (ProtocolState.POLICY_EVALUATED, {"decision_id": first, "policy_version": decision["policy_version"]}),
        *([(ProtocolState.PENDING_APPROVAL, {"decision_ids": pending})] if pending else []),
        (ProtocolState.APPROVED, {"decision_id": str(decision["decision_id"]), "actor_id": decision["actor_id"],
                                  "acknowledgments": len(acknowledgments)}),
    ]
    return await ledger.persist(conn, intent, prelude=prelude, actor=actor, now=now,
                                reminder_interval_s=reminder_interval_s)


async def open_send(gate: SendGate, attempt: dict[str, Any], account: ProviderAccount, token: str, *,
                    pepper: str, actor: str) -> str | None:
    """None when this send may go; else why not. The token in hand must be the attempt's
    destination's (by its digest), and the body it makes must be the committed effect."""
    def derive() -> ledger.Intent:
        if destination_digest(pepper, token) != attempt["destination_digest"]:
            raise ManifestUnbuildable("the token is not the attempt's destination's")
        return payout_intent(attempt, account, token)

    return await gate.open("payout", attempt["attempt_id"], derive, actor=actor)
