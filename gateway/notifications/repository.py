"""The notification aggregate's SQL, run inside the caller's transaction (seed 004, "Notification
Deduplication": "the repository's result type keeps those two cases apart rather than
overloading null"). Queries and their reasons are in ``queries.sql``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from gateway.domain.paging import Keyset, PageRequest
from gateway.payments.evidence_lock import lock_for_evidence
from gateway.store.db import Connection, Cursor, Database, fetch_all, fetch_one
from gateway.store.keyset import directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.notifications")
# One round trip (docs/decisions/0049): the recording statement locks the attempt with the payments' own lock.
_LOCK_RECORDED = lock_for_evidence("(SELECT attempt_id FROM recorded)", commented=False)
IDENTIFY_AND_RECORD = sql.SQL(_SQL["identify_and_record"]).format(
    lock_for_evidence=sql.SQL(_LOCK_RECORDED)).as_string(None)


@dataclass(frozen=True)
class Recorded:
    """The notification is new: this transaction inserted it and must handle it."""

    event_id: int


@dataclass(frozen=True)
class Duplicate:
    """Another transaction committed the same key: it was handled there."""


@dataclass(frozen=True)
class Identified:
    """A payment notification's two lookups and its recording, from one statement, and the attempt
    it names locked for its evidence (``lock_for_evidence``'s row) when it was recorded for one."""

    by_reference: UUID | None
    by_payment_id: UUID | None
    recorded: Recorded | Duplicate
    locked: dict[str, Any] | None


async def send_identify(conn: Connection, params: dict[str, Any]) -> Cursor:
    """A payment notification's first statement (queries.sql ``identify_and_record``): both
    lookups, :func:`record` and, for a notification recorded for one attempt, that attempt's
    evidence locks, in one round trip; ``detail`` gains ``escalation_key`` as the handler would set
    it. ``params``: provider_account, client_reference, provider_payment_id, notification_key,
    detail, conflict_key, unmatched_key, evidence_payment_id, now. Its result is not read here
    (:func:`read_identified`): in a pipeline, several travel in one round trip."""
    return await conn.execute(IDENTIFY_AND_RECORD, {**params, "detail": Jsonb(params["detail"])})


async def read_identified(cursor: Cursor, notification_key: str | None) -> Identified:
    """What :func:`send_identify`'s statement found, recorded and locked."""
    row = await cursor.fetchone()
    if row is None:
        raise RuntimeError("identify_and_record returns one row")
    by_reference, by_payment_id, event_id = row.pop("by_reference"), row.pop("by_payment_id"), row.pop("event_id")
    return Identified(by_reference, by_payment_id, _recorded(event_id, notification_key),
                      row if row["attempt_id"] is not None else None)


def _recorded(event_id: int | None, notification_key: str | None) -> Recorded | Duplicate:
    if event_id is not None:
        return Recorded(int(event_id))
    if notification_key is None:
        raise RuntimeError("an unkeyed notification cannot be a duplicate; the insert returned nothing")
    return Duplicate()


async def record(conn: Connection, *, provider_account: str, notification_key: str | None,
                 attempt_id: UUID | None, detail: dict[str, Any], now: datetime) -> Recorded | Duplicate:
    row = await fetch_one(conn, _SQL["record_notification"], {
        "attempt_id": attempt_id, "now": now, "provider_account": provider_account,
        "notification_key": notification_key, "detail": Jsonb(detail)})
    return _recorded(None if row is None else row["event_id"], notification_key)


async def stored(conn: Connection, reference: str, provider_account: str) -> dict[str, Any] | None:
    """The stored notification an operator names: the gateway's numeric notification event id,
    or the provider's event id, looked up in ``provider_account`` (the target attempt's)."""
    if reference.isdigit():
        return await fetch_one(conn, _SQL["stored_by_event_id"], {"event_id": int(reference)})
    return await fetch_one(conn, _SQL["stored_by_provider_event_id"], {
        "provider_account": provider_account, "provider_event_id": reference})


async def attempt_account(conn: Connection, attempt_id: UUID) -> str | None:
    row = await fetch_one(conn, _SQL["attempt_account"], {"attempt_id": attempt_id})
    return str(row["provider_account"]) if row else None


async def record_application(conn: Connection, *, event_id: int, attempt_id: UUID, actor: str, now: datetime) -> bool:
    """True when this transaction attached the notification; False when one already had."""
    row = await fetch_one(conn, _SQL["record_application"],
                          {"event_id": event_id, "attempt_id": attempt_id, "actor": actor, "now": now})
    return row is not None


async def others_behind_escalation(conn: Connection, *, provider_account: str, escalation_key: str,
                                   event_id: int) -> int:
    row = await fetch_one(conn, _SQL["others_behind_escalation"], {
        "provider_account": provider_account, "escalation_key": escalation_key, "event_id": event_id})
    return int(row["remaining"]) if row else 0


async def resolve_episode(conn: Connection, *, escalation_key: str, now: datetime, note: str) -> list[int]:
    rows = await fetch_all(conn, _SQL["resolve_episode"], {"escalation_key": escalation_key, "now": now, "note": note})
    return [int(row["escalation_id"]) for row in rows]


_QUEUE = directed(_SQL["stored_for_reconciliation"])
QUEUE = Keyset("notifications", "occurred_at", "event_id", int)


async def for_reconciliation(db: Database, state: str, page: PageRequest) -> list[dict[str, Any]]:
    """A page of the stored notifications no attempt took at arrival, by :data:`QUEUE` (queries.sql
    ``stored_for_reconciliation``), each with where an operator applied it and candidate attempts."""
    return await db.fetch_all(_QUEUE[page.order], {"state": state, **page_params(page)})
