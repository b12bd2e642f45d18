"""Applying a stored notification that no single attempt took (seed 004, "The Notification
Handler": "an authorized reconciliation process attaches the stored notification to its attempt
and applies its verified outcome without pretending that it was newly delivered, through the same
conditional transitions, effect-keyed outbox rows, and escalation resolution as normal handling").

Nothing is redelivered or re-recorded: the stored event stays as it was, a
``notification_applications`` row attaches it to the attempt (once: its primary key), its
evidence goes through :meth:`NotificationHandler.apply`, and its unmatched or identity-conflict
episode is resolved once no other notification behind that episode is left unapplied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

import structlog

from gateway.clock import Clock
from gateway.domain.errors import (
    AttemptNotFound,
    NotificationAlreadyApplied,
    NotificationNotApplicable,
    NotificationNotFound,
)
from gateway.domain.paging import PageRequest
from gateway.domain.provider_evidence import from_detail
from gateway.notifications import repository
from gateway.notifications.handler import NotificationHandler
from gateway.store.db import Connection, Database

log = structlog.get_logger("gateway.notifications")

ReconciliationState = Literal["unmatched", "applied", "all"]


@dataclass(frozen=True)
class Applied:
    notification_event_id: int
    attempt: dict[str, Any]
    resolved_escalations: list[int]


class NotificationReconciliation:
    def __init__(self, db: Database, clock: Clock, handler: NotificationHandler) -> None:
        self._db = db
        self._clock = clock
        self._handler = handler

    async def apply_stored(self, reference: str, attempt_id: UUID, *, actor: str) -> Applied:
        """Apply the stored notification named by ``reference`` (the provider's event id, or the
        gateway's numeric notification event id) to ``attempt_id``, in one transaction."""
        now = self._clock.now()
        async with self._db.transaction() as conn:
            account = await repository.attempt_account(conn, attempt_id)
            if account is None:
                raise AttemptNotFound()
            row = await repository.stored(conn, reference, account)
            if row is None:
                raise NotificationNotFound()
            event_id = int(row["event_id"])
            notification = from_detail(row["detail"])
            if row["attempt_id"] is not None or row["applied_to"] is not None:
                raise NotificationAlreadyApplied(notification_event_id=event_id)
            if notification is None or notification.payment is None:
                raise NotificationNotApplicable("only a readable payment notification applies to a payment attempt",
                                                notification_event_id=event_id)
            if row["provider_account"] != account:
                # A test-mode notification never resolves a live attempt, whoever asks.
                raise NotificationNotApplicable("the notification belongs to another provider account",
                                                notification_event_id=event_id)
            if not self._handler.takes(account, notification):
                # A connected account's event never resolves the platform's attempt, nor another's.
                raise NotificationNotApplicable("the notification belongs to another connected account",
                                                notification_event_id=event_id)
            if not await repository.record_application(conn, event_id=event_id, attempt_id=attempt_id,
                                                       actor=actor, now=now):
                raise NotificationAlreadyApplied(notification_event_id=event_id)
            attempt = await self._handler.apply(conn, account, attempt_id, notification, event_id,
                                                row["notification_key"], actor=actor)
            resolved = await self._resolve_episode(conn, row, attempt_id, actor)
        log.info("notification_applied_by_operator", notification_event_id=event_id, attempt_id=str(attempt_id),
                 actor=actor, attempt_state=attempt["state"], resolved_escalations=resolved)
        return Applied(event_id, attempt, resolved)

    async def queue(self, state: ReconciliationState, page: PageRequest) -> list[dict[str, Any]]:
        """A page of the stored notifications an operator may apply (``unmatched``), has applied, or ``all``."""
        return await repository.for_reconciliation(self._db, state, page)

    async def _resolve_episode(self, conn: Connection, row: dict[str, Any], attempt_id: UUID, actor: str) -> list[int]:
        """Close the notification's unmatched or identity-conflict episode, unless other stored
        notifications that joined the same coarse episode still wait for reconciliation."""
        escalation_key = row["detail"].get("escalation_key")
        if not escalation_key:
            return []
        remaining = await repository.others_behind_escalation(
            conn, provider_account=row["provider_account"], escalation_key=escalation_key, event_id=row["event_id"])
        if remaining:
            return []
        return await repository.resolve_episode(
            conn, escalation_key=escalation_key, now=self._clock.now(),
            note=f"notification {row['event_id']} applied to attempt {attempt_id} by {actor}")
