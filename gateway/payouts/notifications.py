"""Applying a verified CardCo payout notification to the payouts aggregate, inside the notification
handler's transaction (API.md, "Provider notifications"; docs/decisions/0011: the handler's one call
site; seed 000, "Reconcile Before Any New Attempt": a verified asynchronous notification is
evidence, and it "may resolve ATT-1 through the same narrow evidence write").

:func:`match` finds the attempt by the verified account and the client reference
(``<payout_id>-a<N>``) and, independently, by CardCo's payout id, each row locked. :func:`apply`
classifies the payout object with the reconciler's versioned table, lets
``gateway.domain.payout_notifications.decide`` choose, and writes through ``attempts.resolve``,
the conditional transition every payout writer uses (reservation paid or released, payout moved,
escalations closed, effect protocol followed), or records a return, or escalates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain.cardco_notifications import Notification
from gateway.domain.payout_notifications import Action, Escalate, Ignore, RecordReturn, Resolve, decide
from gateway.domain.payout_outcomes import AttemptState, Classification, Expected, classify_record
from gateway.effects.certify import Certifier
from gateway.payouts import attempts, history, recalls
from gateway.payouts.escalations import escalate
from gateway.settings import Settings
from gateway.store.db import Connection

ACTOR = "notification-handler"


@dataclass(frozen=True)
class Match:
    """What a payout notification names: one attempt, nothing, or two different attempts."""

    attempt: dict[str, Any] | None
    conflict: tuple[str, str] | None = None  # (by reference, by provider id) attempt ids


async def match(conn: Connection, account_id: str, notification: Notification) -> Match:
    if notification.kind == "payout_recall":  # docs/decisions/0015: a recall attempt, never a payout's
        by_reference, by_provider_id = await recalls.match(conn, account_id, notification)
    else:
        by_reference, by_provider_id = await attempts.lock_attempt(
            conn, account_id, client_reference=notification.client_reference,
            provider_payout_id=notification.provider_object_id)
    if by_reference and by_provider_id and by_reference["attempt_id"] != by_provider_id["attempt_id"]:
        return Match(None, (str(by_reference["attempt_id"]), str(by_provider_id["attempt_id"])))
    return Match(by_reference or by_provider_id)


async def apply(conn: Connection, now: datetime, attempt: dict[str, Any], notification: Notification, *,
                notification_event_id: int, notification_key: str | None, settings: Settings) -> str:
    """Apply one matched notification; the action taken (``resolved``, ``returned``, ``ignored``,
    ``mismatch``, ``contradiction``), recorded in the payout's history either way."""
    subject = notification.subject
    if notification.kind == "payout_recall":
        return await recalls.apply_notification(
            conn, now, attempt, notification, notification_key=notification_key, actor=ACTOR,
            reminder_interval_s=settings.reminder_interval_s, certifier=Certifier.of(settings),  # issue 8
            evidence={"source": "notification", "notification_event_id": notification_event_id,
                      "provider_event_id": notification.event_id, "type": notification.event_type,
                      "status": subject.status, "provider_recall_id": notification.provider_object_id,
                      "attempt_state": attempt["state"]})
    seen = classify_record(subject.model_dump(mode="json"),
                           Expected(attempt["client_reference"], attempt["amount_minor"], attempt["currency"]))
    action = decide(AttemptState(attempt["state"]), attempt["provider_payout_id"], seen)
    evidence = {"source": "notification", "notification_event_id": notification_event_id,
                "provider_event_id": notification.event_id, "type": notification.event_type,
                "status": subject.status, "provider_payout_id": notification.provider_object_id,
                "attempt_state": attempt["state"]}
    taken = await _take(conn, now, attempt, action, seen, evidence, notification_key, settings)
    await history.append(conn, attempt["payout_id"], "provider_observation", actor=ACTOR, now=now,
                         attempt_id=attempt["attempt_id"], detail=evidence | {"action": taken})
    return taken


async def _take(conn: Connection, now: datetime, attempt: dict[str, Any], action: Action, seen: Classification,
                evidence: dict[str, Any], notification_key: str | None, settings: Settings) -> str:
    if isinstance(action, Resolve):
        written = await attempts.resolve(
            conn, now, attempt, action.state, seen.reason, actor=ACTOR, from_states=action.from_states,
            provider_payout_id=seen.provider_payout_id, provider_status=seen.provider_status,
            next_check_at=now if action.state is AttemptState.STARTED else None,
            certifier=Certifier.of(settings))  # seed 001 (issue 8): a confirmed effect is certified here too
        if written is None:  # the row is locked since match(): only a broken invariant gets here
            raise RuntimeError(f"payout attempt {attempt['attempt_id']} moved under its own lock")
        return "resolved"
    if isinstance(action, RecordReturn):
        return "returned" if await attempts.record_return(conn, now, attempt, actor=ACTOR) else "ignored"
    if isinstance(action, Ignore):
        return "ignored"
    if not isinstance(action, Escalate):
        raise TypeError(f"unhandled notification action {action!r}")
    problem = action.cause if notification_key is None else f"{action.cause}:{notification_key}"
    await escalate(conn, now, attempt, problem, reason=f"payout-{action.cause}",
                   reminder_interval_s=settings.reminder_interval_s,
                   notification_event_id=evidence["notification_event_id"],
                   provider_event_id=evidence["provider_event_id"], status=evidence["status"],
                   notified_provider_payout_id=evidence["provider_payout_id"])
    return action.cause
