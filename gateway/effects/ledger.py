"""Writing effect records and their protocol ledger, always inside the caller's transaction
(seed 001, "The intent record": ``persist_intent`` and ``append_ledger_event``).

:func:`persist` writes the record in the transaction that makes the attempt sendable, so "no
payment-rail network call is permitted before COMMIT succeeds" holds by construction: the sender
reads the attempt only after that commit. :func:`follow` appends the protocol states an attempt's
new state implies (gateway.domain.effect_protocol), and certifies a confirmed effect when given a
:class:`~gateway.effects.certify.Certifier`. A protocol step the table refuses is logged, never
raised: the projection must not block the recording of money evidence.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import structlog
from psycopg import sql as psql
from psycopg.types.json import Jsonb

from gateway.domain import attempt_kinds
from gateway.domain.effect_manifest import AttemptKind, Transport, effect_digest
from gateway.domain.effect_protocol import ProtocolState, TransitionRefused, check
from gateway.domain.effect_protocol import follow as protocol_follow
from gateway.escalations.store import raise_escalation
from gateway.store.db import Connection, Cursor, Statement, fetch_one
from gateway.store.queries import load_queries

if TYPE_CHECKING:
    from gateway.effects.certify import Certifier, Subject

_SQL = load_queries("gateway.effects")
log = structlog.get_logger("gateway.effects")


def with_ledger_of_record(statement: str, *, prefix: str = "") -> str:
    """``statement`` (a named block with ``{ledger_of_record}`` in a CTE after its ``record`` CTE)
    with the ledger rows of that record appended by it (queries.sql ``ledger_of_record``), their
    time, actor and rows taken from its ``<prefix>now``, ``<prefix>actor`` and ``<prefix>entries``
    parameters: one text for the rows every record-writing statement appends."""
    template = _SQL["ledger_of_record"]
    rows = psql.SQL(template[template.index("INSERT INTO"):]).format(
        **{name: psql.SQL(f"%({prefix}{name})s") for name in ("now", "actor", "entries")})
    return psql.SQL(statement).format(ledger_of_record=rows).as_string(None)


_INSERT_RECORD = with_ledger_of_record(_SQL["insert_record"])

Step = tuple[ProtocolState, dict[str, Any]]


@dataclass(frozen=True)
class Intent:
    """One attempt's intent as its creator derived it."""

    kind: AttemptKind
    attempt_id: uuid.UUID
    transport: Transport
    manifest: dict[str, Any]
    policy_digest: bytes | None = None
    approval_set_digest: bytes | None = None

    @functools.cached_property
    def digest(self) -> bytes:
        """The manifest's digest, canonicalised once per intent (RFC 8785 in pure Python is slow)."""
        return effect_digest(self.manifest)


def escalation_key(kind: AttemptKind, attempt_id: uuid.UUID | str, problem: str) -> str:
    """``attempt:<id>:<problem>`` for checkout, ``payout-attempt:<id>:<problem>`` for payouts,
    ``payout-recall-attempt:<id>:<problem>`` for recalls (the keys each area's own escalations
    use, so the resolution that settles the attempt closes them); with ``"%s"`` for the id, the
    form SQL's format() completes (rows.sql ``overdue_unescalated``)."""
    return f"{attempt_kinds.named(kind).escalation_prefix}:{attempt_id}:{problem}"


async def escalate(conn: Connection, kind: AttemptKind, attempt_id: uuid.UUID, problem: str, now: datetime,
                   reminder_interval_s: float, details: dict[str, Any]) -> None:
    """Raise ``problem`` for the attempt; payout and recall attempts are named in details (the escalation's
    attempt_id column references checkout attempts only)."""
    await raise_escalation(conn, escalation_key=escalation_key(kind, attempt_id, problem), reason=problem, now=now,
                           reminder_interval_s=reminder_interval_s,
                           attempt_id=attempt_id if kind == attempt_kinds.PAYMENT.name else None,
                           details={"attempt_id": str(attempt_id), **details})


async def persist(conn: Connection, intent: Intent, *, prelude: Sequence[Step], actor: str, now: datetime,
                  reminder_interval_s: float) -> bool:
    """Write the record and its ledger up to INTENT_PERSISTED; True when the stored record is this
    intent. False (a different key or digest is stored for this attempt or under this key) leaves
    the stored record as it is, raises ``effect-intent-mismatch``, and leaves every later send of
    the attempt to be refused by the send gate."""
    # The ledger up to INTENT_PERSISTED travels with the insert and is written only if the record
    # is; a record this statement inserted is this intent, with exactly those rows. Only a conflict
    # needs the stored record read back and compared.
    inserted = await fetch_one(conn, _INSERT_RECORD, record_parameters(intent, prelude, actor, now))
    if inserted is not None:
        return True
    return await kept(conn, intent, now, reminder_interval_s)


def record_parameters(intent: Intent, prelude: Sequence[Step], actor: str, now: datetime) -> dict[str, Any]:
    """``insert_record``'s parameters: the record of ``intent`` and its ledger rows up to
    INTENT_PERSISTED after ``prelude``. A statement that inserts a record elsewhere (the checkout's
    attempt insert) takes the same ones."""
    digest = intent.digest
    entries, _ = _persisted(intent, prelude, actor, now)
    return {"attempt_id": intent.attempt_id, "attempt_kind": intent.kind, "rail": intent.transport.rail,
            "provider_account": intent.transport.provider_account, "idempotency_key": intent.transport.idempotency_key,
            "effect_digest": digest, "policy_digest": intent.policy_digest,
            "approval_set_digest": intent.approval_set_digest, "manifest": Jsonb(intent.manifest), "now": now,
            "actor": actor, "entries": rows_of(entries)}


def persisted(intent: Intent, prelude: Sequence[Step], actor: str, now: datetime) -> dict[str, Any]:
    """The record of ``intent`` as the insert of :func:`record_parameters` leaves it: its kind,
    digest and key, and its last ledger row's ``sequence`` and ``protocol_state``
    (INTENT_PERSISTED), the fields :func:`advance_record` and the send gate read of a locked record."""
    _, record = _persisted(intent, prelude, actor, now)
    return {**record, "attempt_kind": intent.kind}


def _persisted(intent: Intent, prelude: Sequence[Step], actor: str,
               now: datetime) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    steps = [*prelude, (ProtocolState.INTENT_PERSISTED, {"idempotency_key": intent.transport.idempotency_key})]
    return entries_of({"attempt_id": intent.attempt_id, "sequence": None, "protocol_state": None,
                     "effect_digest": intent.digest, "idempotency_key": intent.transport.idempotency_key},
                    steps, actor, now)


async def kept(conn: Connection, intent: Intent, now: datetime, reminder_interval_s: float) -> bool:
    """After an insert of ``intent``'s record that inserted nothing (seed 001: "ON CONFLICT DO
    NOTHING; assert stored == K, d"): True when the record stored for the attempt is this intent;
    otherwise ``effect-intent-mismatch`` is raised and False returned."""
    digest = intent.digest
    stored = await fetch_one(conn, _SQL["lock_record"], {"attempt_id": intent.attempt_id})
    if stored is None or bytes(stored["effect_digest"]) != digest \
            or stored["idempotency_key"] != intent.transport.idempotency_key:
        await escalate(conn, intent.kind, intent.attempt_id, "effect-intent-mismatch", now, reminder_interval_s, {
            "idempotency_key": intent.transport.idempotency_key, "effect_digest": digest.hex(),
            "stored_effect_digest": bytes(stored["effect_digest"]).hex() if stored else None})
        log.error("effect_intent_mismatch", attempt_id=str(intent.attempt_id), attempt_kind=intent.kind)
        return False
    return True


async def lock_record(conn: Connection, attempt_id: uuid.UUID) -> Cursor:
    """Send the record's lock (queries.sql ``lock_record``) and return its cursor unread: inside a
    pipeline it travels with the caller's writes, and :func:`advance` reads it after their sync."""
    return await conn.execute(_SQL["lock_record"], {"attempt_id": attempt_id})


def lock_record_with(evidence: Statement) -> Statement:
    """:func:`lock_record`'s statement reading, in the same statement, the event ids the area's
    ``evidence`` query answers, as ``evidence_event_ids`` (queries.sql ``lock_record_with_evidence``)."""
    text = evidence if isinstance(evidence, str) else evidence.as_string(None)
    query = "\n".join(line for line in text.strip().removesuffix(";").splitlines() if not line.startswith("--"))
    return psql.SQL(_SQL["lock_record_with_evidence"]).format(evidence=psql.SQL(query)).as_string(None)


async def advance(conn: Connection, attempt_id: uuid.UUID, attempt_state: str, *, actor: str, now: datetime,
                  certifier: Certifier | None = None, subject: Subject | None = None,
                  locked: Cursor | None = None, read: Read | None = None) -> str | None:
    """Append what ``attempt_state`` implies for the effect (nothing for an attempt without a record,
    e.g. one created before effect records existed); with ``certifier`` and the area's ``subject``,
    a newly confirmed effect is certified in the same transaction. ``locked`` is the caller's
    :func:`lock_record` sent earlier in the transaction, ``read`` the record it already read.
    The protocol state after, or None."""
    record = await advance_record(conn, attempt_id, attempt_state, actor=actor, now=now, certifier=certifier,
                                  subject=subject, locked=locked, read=read)
    return None if record is None else str(record["protocol_state"])


async def advance_record(conn: Connection, attempt_id: uuid.UUID, attempt_state: str, *, actor: str,
                         now: datetime, certifier: Certifier | None = None, subject: Subject | None = None,
                         locked: Cursor | None = None, held: Held | None = None,
                         read: Read | None = None) -> dict[str, Any] | None:
    """:func:`advance`, answering the locked record as it stands after (its ``sequence`` and
    ``protocol_state`` the last appended), for a caller that appends more in the same transaction
    (the endpoint's send gate), or None for an attempt without a record. With ``held`` the rows are
    kept there, unsent, for the caller to send with its own (:class:`Held`); not with a certifier.
    ``read``: the record as the caller already has it (:class:`Read`), instead of ``locked``."""
    if held is not None and certifier is not None:
        raise ValueError("a certified step sends its rows: hold none")
    if read is not None:
        record = read.record
    else:
        record = await (locked if locked is not None else await lock_record(conn, attempt_id)).fetchone()
    if record is None:
        return None
    current = ProtocolState(record["protocol_state"])
    try:
        states = protocol_follow(record["attempt_kind"], current, attempt_state)
    except TransitionRefused as refused:
        log.error("effect_protocol_refused", attempt_id=str(attempt_id), attempt_state=attempt_state,
                  protocol_state=current.value, reason=str(refused))
        return record
    steps = [(state, {"attempt_state": attempt_state}) for state in states]
    if certifier is None or subject is None:
        return await _append(conn, record, steps, actor, now, held)
    entries, record = entries_of(record, steps, actor, now)
    if record["protocol_state"] == ProtocolState.EFFECT_CONFIRMED:
        # The rows up to EFFECT_CONFIRMED travel in the certificate's statement (one, not two).
        certified = await certifier.issue(conn, record, subject, now, actor=actor, before=rows_of(entries))
        if certified is not None:
            return certified
    await _send(conn, entries)
    return record


async def step(conn: Connection, record: dict[str, Any], state: ProtocolState, *, actor: str, now: datetime,
               detail: dict[str, Any], held: Held | None = None) -> dict[str, Any]:
    """Append one explicit transition to a record locked by the caller (the send gate's EXECUTING
    and RECONCILING); refused by the table like any other. With ``held``, after the rows held
    there, in the same statement."""
    return await _append(conn, record, [(state, detail)], actor, now, held)


@dataclass(frozen=True)
class Read:
    """A record the caller read under its lock with a statement of its own (the checkout's Started
    transition locks it in the statement that starts the attempt), or None for none."""

    record: dict[str, Any] | None


class Held:
    """Ledger rows of one locked record computed but not sent yet, so that the next steps of the
    same transaction go with them in one statement (the endpoint's Started transaction: the
    attempt's AUTHORIZATION_ISSUED, then the send gate's EXECUTING). The holder sends them with
    :meth:`send` before its transaction ends; each row was checked against the protocol's table
    when it was added, as an unheld one is."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    async def send(self, conn: Connection) -> None:
        entries, self.entries = self.entries, []
        await _send(conn, entries)

    def rows(self) -> Jsonb:
        """The rows held, as ``append_ledger``'s ``entries``, for a statement that appends them itself."""
        return rows_of(self.entries)


def next_entry(record: dict[str, Any], state: ProtocolState, detail: dict[str, Any], actor: str,
               now: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters of the ledger row that moves ``record`` (locked, as it stands) to ``state``
    (its ``sequence``, ``from_state``, ``to_state`` and ``detail``, and the effect's own columns),
    refused here by the table like any other step, and the record as it stands after that row."""
    current = None if record["protocol_state"] is None else ProtocolState(record["protocol_state"])
    check(current, state)
    sequence = int(record["sequence"] or 0) + 1
    return {"attempt_id": record["attempt_id"], "sequence": sequence, "from_state": current, "to_state": state.value,
            "effect_digest": record["effect_digest"], "idempotency_key": record["idempotency_key"], "now": now,
            "actor": actor, "detail": Jsonb(detail)}, {**record, "sequence": sequence, "protocol_state": state.value}


def entries_of(record: dict[str, Any], steps: Sequence[Step], actor: str,
             now: datetime) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ledger rows ``steps`` append to ``record`` (:func:`next_entry`, in order), and the record
    as it stands after them."""
    entries = []
    for state, detail in steps:
        entry, record = next_entry(record, state, detail, actor, now)
        entries.append(entry)
    return entries, record


def rows_of(entries: Sequence[dict[str, Any]]) -> Jsonb:
    """``append_ledger``'s ``entries``: each row's own columns, as one JSON array."""
    return Jsonb([{"sequence": entry["sequence"], "from_state": entry["from_state"], "to_state": entry["to_state"],
                   "detail": entry["detail"].obj} for entry in entries])


async def _send(conn: Connection, entries: Sequence[dict[str, Any]]) -> None:
    """Consecutive rows of one record as one statement that reads nothing back (queries.sql
    ``append_ledger``)."""
    if entries:
        await conn.execute(_SQL["append_ledger"], {**entries[0], "entries": rows_of(entries)})


async def _append(conn: Connection, record: dict[str, Any], steps: Sequence[Step], actor: str,
                  now: datetime, held: Held | None = None) -> dict[str, Any]:
    """``steps`` as one statement (:func:`_send`), or added to ``held`` to go with later ones."""
    entries, record = entries_of(record, steps, actor, now)
    if held is not None:
        held.entries.extend(entries)
    else:
        await _send(conn, entries)
    return record
