"""The send gate: every send, first or same-key resend, re-derives the effect digest from what it is
about to send and refuses on any difference from the committed record (seed 001, "Stable identity
and exact bytes": "A second worker may resume the intent. It may not improvise a second payment").

It runs in its own short transaction right before the provider call and records the protocol step
that call is: AUTHORIZATION_ISSUED -> EXECUTING for a first send, OUTCOME_UNKNOWN -> RECONCILING for
a reconciliation's same-key resend. A refusal raises ``effect-digest-mismatch`` (or
``effect-record-missing``) and sends nothing; so does a gate whose commit is unconfirmed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import structlog

from gateway.clock import Clock
from gateway.domain.effect_manifest import AttemptKind, ManifestUnbuildable
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.store.db import Connection, Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")
log = structlog.get_logger("gateway.effects")

UNCONFIRMED = (psycopg.Error, OSError, TimeoutError)
_NEXT = {ProtocolState.AUTHORIZATION_ISSUED: ProtocolState.EXECUTING,
         ProtocolState.OUTCOME_UNKNOWN: ProtocolState.RECONCILING}


@dataclass(frozen=True)
class SendGate:
    db: Database
    clock: Clock
    reminder_interval_s: float

    async def open(self, kind: AttemptKind, attempt_id: uuid.UUID, derive: Callable[[], ledger.Intent], *,
                   actor: str) -> str | None:
        """None when the send may go; otherwise why it must not (and nothing was sent). ``derive``
        builds the intent from exactly what the send would carry."""
        try:
            async with self.db.transaction() as conn:
                problem = await self.open_in(conn, kind, attempt_id, derive, actor=actor)
        except UNCONFIRMED as error:
            log.warning("effect_gate_unconfirmed", attempt_id=str(attempt_id), error_type=type(error).__name__)
            return "effect-gate-unconfirmed"
        if problem is not None:
            log.error("effect_send_refused", attempt_id=str(attempt_id), attempt_kind=kind, why=problem)
        return problem

    async def open_in(self, conn: Connection, kind: AttemptKind, attempt_id: uuid.UUID,
                      derive: Callable[[], ledger.Intent], *, actor: str,
                      record: dict[str, Any] | None = None, held: ledger.Held | None = None) -> str | None:
        """:meth:`open` in the caller's transaction: the endpoint's first send opens the gate in the
        transaction that commits Started, so the send follows one commit (docs/decisions/0031). The
        refusal is returned (and escalated in that transaction), not logged. ``record`` is the
        effect record as the caller locked it in this transaction and left it
        (:func:`ledger.advance_record`); without it the gate locks it itself. With ``held``, the
        step's ledger row joins the caller's held rows, which the caller sends before it commits."""
        try:
            intent: ledger.Intent | None = derive()
        except ManifestUnbuildable:
            intent = None  # a stored request that no longer reads as an effect has drifted too
        now = self.clock.now()
        if record is None:
            record = await (await ledger.lock_record(conn, attempt_id)).fetchone()
        problem = _problem(record, intent)
        if problem is not None:
            await ledger.escalate(conn, kind, attempt_id, problem, now, self.reminder_interval_s, {
                "derived_effect_digest": intent.digest.hex() if intent else None,
                "stored_effect_digest": bytes(record["effect_digest"]).hex() if record else None})
        elif record is not None and (following := _NEXT.get(ProtocolState(record["protocol_state"]))):
            await ledger.step(conn, record, following, actor=actor, now=now,
                              detail={"effect_digest": bytes(record["effect_digest"]).hex()}, held=held)
        return problem

    async def check(self, attempt_id: uuid.UUID, derive: Callable[[], ledger.Intent]) -> str | None:
        """What :meth:`open` would refuse the send for, without locking, stepping or escalating:
        recovery asks before it commits a send intent, so a drifted request never gets one."""
        try:
            intent: ledger.Intent | None = derive()
        except ManifestUnbuildable:
            intent = None
        return _problem(await self.db.fetch_one(_SQL["get_record"], {"attempt_id": attempt_id}), intent)


def _problem(record: dict[str, Any] | None, intent: ledger.Intent | None) -> str | None:
    if record is None:
        return "effect-record-missing"
    if intent is None or bytes(record["effect_digest"]) != intent.digest \
            or record["idempotency_key"] != intent.transport.idempotency_key:
        return "effect-digest-mismatch"
    return None
