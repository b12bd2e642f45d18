"""The seed 001 effect records of payout and recall attempts: persisted inside each kind's atomic
claim (the transaction that creates the Claimed attempt), from the very request the executor will
send (gateway.pipeline.effects.intent), with the governance behind it.

- A payout's ``policy_digest`` commits to the allowing decision's policy version and reason, its
  ``approval_set_digest`` to the acknowledgments and approvals of that authorization round; the
  destination is named by id and version, never by token.
- A recall (docs/decisions/0015) commits to its own Allowed recall decision and requesting clerk.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.domain.canonical import digest
from gateway.domain.effect_manifest import (
    approval_set_document,
    policy_document,
    recall_approval_set_document,
    recall_policy_document,
)
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.pipeline.effects import intent
from gateway.pipeline.kind import AttemptKind
from gateway.settings import ProviderAccount
from gateway.store.db import Connection, fetch_all, fetch_required
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "governance.sql")
PENDING = ("AcknowledgmentRequired", "EscalationRecommended")


async def persist_payout(kind: AttemptKind, conn: Connection, attempt: dict[str, Any], token: str, *,
                         account: ProviderAccount, now: datetime, actor: str, reminder_interval_s: float) -> bool:
    """The claimed payout attempt's record and the ledger of the decisions behind it: PROPOSED,
    POLICY_EVALUATED, PENDING_APPROVAL when this authorization round needed an acknowledgment or
    approval, APPROVED, INTENT_PERSISTED."""
    decision = await fetch_required(conn, _SQL["payout_governance"], {"decision_id": attempt["decision_id"]})
    acknowledgments = await fetch_all(conn, _SQL["payout_acknowledgments"], {
        "payout_id": attempt["payout_id"], "destination_version": attempt["destination_version"]})
    derived = intent(kind, attempt, account, token, policy_digest=digest(policy_document(decision)),
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
    return await ledger.persist(conn, derived, prelude=prelude, actor=actor, now=now,
                                reminder_interval_s=reminder_interval_s)


async def persist_recall(kind: AttemptKind, conn: Connection, attempt: dict[str, Any], *, account: ProviderAccount,
                         now: datetime, actor: str, reminder_interval_s: float) -> bool:
    """The claimed recall attempt's record and the ledger of the recall decision behind it:
    PROPOSED, POLICY_EVALUATED, APPROVED, INTENT_PERSISTED."""
    decision = await fetch_required(conn, _SQL["recall_governance"], {"decision_id": attempt["decision_id"]})
    derived = intent(kind, attempt, account, None, policy_digest=digest(recall_policy_document(decision)),
                     approval_set_digest=digest(recall_approval_set_document(decision)))
    decision_id = str(decision["decision_id"])
    prelude: list[ledger.Step] = [
        (ProtocolState.PROPOSED, {"payout_id": attempt["payout_id"], "operation": decision["operation"]}),
        (ProtocolState.POLICY_EVALUATED, {"decision_id": decision_id, "policy_version": decision["policy_version"]}),
        (ProtocolState.APPROVED, {"decision_id": decision_id, "actor_id": decision["actor_id"]}),
    ]
    return await ledger.persist(conn, derived, prelude=prelude, actor=actor, now=now,
                                reminder_interval_s=reminder_interval_s)
