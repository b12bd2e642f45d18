"""Applying a verified provider notification to the attempt of any kind it names, inside the
notification handler's transaction (API.md, "Provider notifications"; docs/decisions/0011; seed
000, "Reconcile Before Any New Attempt": a verified asynchronous notification is evidence, and it
"may resolve ATT-1 through the same narrow evidence write").

:func:`match` finds the attempt by the verified account and the client reference and,
independently, by the provider's id, each row locked. :func:`apply` classifies the object with the
kind's versioned table, lets the one evidence rule (``gateway.domain.evidence_rule.verdict``)
choose, and writes through :func:`gateway.pipeline.transitions.resolve`, or records a return (a
kind with returns), or escalates (a pipeline kind names another provider id than the recorded one
a ``mismatch``: the record is not the attempt's, docs/decisions/0061); the observation goes to the
kind's history either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gateway.domain.evidence_rule import Escalate, Keep, Later, Verdict, Write, classified, verdict
from gateway.domain.outcomes import SETTLED, AttemptState, Classification, ProviderIdClaimed, classify_record
from gateway.domain.provider_evidence import Notification
from gateway.effects.certify import Certifier
from gateway.pipeline import transitions
from gateway.pipeline.accounts import operation
from gateway.pipeline.kind import AttemptKind, Row
from gateway.store.db import Connection

ACTOR = "notification-handler"


@dataclass(frozen=True)
class Match:
    """What a notification names: one attempt, nothing, or two different attempts."""

    attempt: Row | None
    conflict: tuple[str, str] | None = None  # (by reference, by provider id) attempt ids


async def match(kind: AttemptKind, conn: Connection, account_id: str, notification: Notification) -> Match:
    by_reference, by_provider_id = await kind.rows.lock_attempt(
        conn, account_id, client_reference=notification.client_reference, provider_id=notification.provider_object_id)
    if by_reference and by_provider_id and by_reference["attempt_id"] != by_provider_id["attempt_id"]:
        return Match(None, (str(by_reference["attempt_id"]), str(by_provider_id["attempt_id"])))
    return Match(by_reference or by_provider_id)


async def apply(kind: AttemptKind, conn: Connection, now: datetime, attempt: Row, notification: Notification, *,
                notification_event_id: int, notification_key: str | None, reminder_interval_s: float,
                certifier: Certifier) -> str:
    """Apply one matched notification; the action taken (``resolved``, ``returned``, ``ignored``,
    ``mismatch``, ``contradiction``), recorded in the kind's history either way."""
    subject = notification.subject
    table = operation(kind, attempt["provider_account"]).table
    seen = classify_record(subject.model_dump(mode="json"), kind.expected(attempt), table)
    action = verdict(AttemptState(attempt["state"]), attempt[kind.rows.provider_id], classified(seen))
    evidence = {"source": "notification", "notification_event_id": notification_event_id,
                "provider_event_id": notification.event_id, "type": notification.event_type,
                "status": subject.status, kind.rows.provider_id: notification.provider_object_id,
                "attempt_state": attempt["state"]}
    taken = await _take(kind, conn, now, attempt, action, seen, evidence, notification_key, reminder_interval_s,
                        certifier)
    await kind.history(conn, attempt[kind.parent], "provider_observation", actor=ACTOR, now=now,
                       attempt_id=attempt["attempt_id"], detail=evidence | {"action": taken})
    return taken


async def _take(kind: AttemptKind, conn: Connection, now: datetime, attempt: Row, action: Verdict,
                seen: Classification, evidence: dict[str, object], notification_key: str | None,
                reminder_interval_s: float, certifier: Certifier) -> str:
    if isinstance(action, Write):
        try:
            written = await transitions.resolve(
                kind, conn, now, attempt, action.state, seen.reason, actor=ACTOR, from_states=action.from_states,
                provider_id=seen.provider_id, provider_status=seen.provider_status,
                next_check_at=None if action.state in SETTLED else now,  # in flight: the reconciler looks now
                certifier=certifier)  # seed 001: a confirmed effect is certified here too
        except ProviderIdClaimed:
            # Another attempt recorded this id since match() looked (seed 004): both stay as they are.
            action = Escalate("mismatch")
        else:
            if written is None:  # the row is locked since match(): only a broken invariant gets here
                raise RuntimeError(f"{kind.label} attempt {attempt['attempt_id']} moved under its own lock")
            return "resolved"
    if isinstance(action, Later):  # a return; a kind without returns has nothing to record
        recorded = kind.record_return is not None and await kind.record_return(conn, now, attempt, ACTOR, False)
        return "returned" if recorded else "ignored"
    if isinstance(action, Keep):
        return "ignored"
    if not isinstance(action, Escalate):
        raise TypeError(f"unhandled notification action {action!r}")
    cause = "mismatch" if action.cause == "other-id" else action.cause
    problem = cause if notification_key is None else f"{cause}:{notification_key}"
    await transitions.escalate(kind, conn, now, attempt, problem, reminder_interval_s=reminder_interval_s,
                               notification_event_id=evidence["notification_event_id"],
                               provider_event_id=evidence["provider_event_id"], status=evidence["status"],
                               **{f"notified_{kind.rows.provider_id}": evidence[kind.rows.provider_id]})
    return cause
