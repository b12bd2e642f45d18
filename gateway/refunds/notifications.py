"""``payment.refunded`` as evidence about a refund attempt, inside the notification handler's
transaction (docs/decisions/0021: CardCo's refunded payment names the refund that
did it). A refund the gateway made is matched like any attempt kind, by the verified account and
the refund's own reference ``<order_id>-r<N>`` and, independently, CardCo's refund id, and applied
through the pipeline's one notification application (``gateway.pipeline.notifications``). A
``payment.refunded`` that names no refund attempt stays the payment attempt's later lifecycle event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain.provider_evidence import Notification, refund_evidence
from gateway.effects.certify import Certifier
from gateway.pipeline import notifications
from gateway.pipeline.notifications import Match
from gateway.refunds.attempts import REFUND
from gateway.settings import Settings
from gateway.store.db import Connection


@dataclass(frozen=True)
class RefundMatch:
    notification: Notification  # the event seen as the refund's own evidence
    found: Match


async def match(conn: Connection, account_id: str, notification: Notification) -> RefundMatch | None:
    """The refund attempt (or the two conflicting ones) a notification names; None when it names none."""
    refund = refund_evidence(notification)
    if refund is None:
        return None
    found = await notifications.match(REFUND, conn, account_id, refund)
    return RefundMatch(refund, found) if found.attempt is not None or found.conflict is not None else None


async def apply(conn: Connection, now: datetime, attempt: dict[str, Any], refund: Notification, *,
                notification_event_id: int, notification_key: str | None, settings: Settings) -> str:
    """Apply one matched refund notification; the action taken, recorded in the refund's history."""
    return await notifications.apply(REFUND, conn, now, attempt, refund, notification_event_id=notification_event_id,
                                     notification_key=notification_key,
                                     reminder_interval_s=settings.reminder_interval_s,
                                     certifier=Certifier.of(settings))  # seed 001: a confirmed refund is certified
