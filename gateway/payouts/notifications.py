"""Applying a verified CardCo payout notification to the payouts aggregate, inside the notification
handler's transaction (API.md, "Provider notifications"; docs/decisions/0011: the handler's one call
site). ``payout.recall*`` notifications name recall attempts (docs/decisions/0015), every other
``payout.*`` one a payout attempt; both go through the pipeline's one notification application
(gateway.pipeline.notifications) with their kind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.domain.provider_evidence import Notification
from gateway.effects.certify import Certifier
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.recalls import RECALL
from gateway.pipeline import notifications
from gateway.pipeline.kind import AttemptKind
from gateway.pipeline.notifications import Match
from gateway.settings import Settings
from gateway.store.db import Connection

__all__ = ["Match", "apply", "match"]


def _kind(notification: Notification) -> AttemptKind:
    return RECALL if notification.kind == "payout_recall" else PAYOUT


async def match(conn: Connection, account_id: str, notification: Notification) -> Match:
    return await notifications.match(_kind(notification), conn, account_id, notification)


async def apply(conn: Connection, now: datetime, attempt: dict[str, Any], notification: Notification, *,
                notification_event_id: int, notification_key: str | None, settings: Settings) -> str:
    """Apply one matched notification; the action taken, recorded in the payout's history either way."""
    return await notifications.apply(_kind(notification), conn, now, attempt, notification,
                                     notification_event_id=notification_event_id, notification_key=notification_key,
                                     reminder_interval_s=settings.reminder_interval_s,
                                     certifier=Certifier.of(settings))  # seed 001
