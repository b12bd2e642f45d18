"""Every write an attempt of any kind goes through after its claim (seed 000, "Atomically Claim the
Grant and the Payout", "Classify the Outcome"; seed 001 protocol; seed 004 "Escalations").

- :func:`mark_started`: Started before the send, conditional on the owner's epoch, lease and send
  deadline; True only when the commit is confirmed (any doubt: do not send, and it is logged);
- :func:`count_send`: the same conditions re-checked right before each send;
- :func:`resolve`: the one narrow evidence write, from the states the writer observed, that also
  closes the attempt's escalations when it settles, lets the parent row follow, appends the
  transition to the kind's history and advances the seed 001 protocol (certifying a confirmed
  effect), all in the caller's transaction;
- :func:`escalate`: ``<kind prefix>:<attempt_id>:<problem>``, closed by that resolution;
  :func:`escalate_mismatch`: a record that is not the attempt's, both provider ids named.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import structlog

from gateway.domain.outcomes import FINAL_AFTER_CLAIM, AttemptState
from gateway.effects.certify import Certifier, Subject
from gateway.effects.ledger import advance, escalation_key
from gateway.escalations.store import raise_escalation, resolve_by_key_prefix
from gateway.pipeline.kind import AttemptKind, Row
from gateway.store.db import Connection, Database, fetch_one

log = structlog.get_logger("gateway.pipeline")



async def mark_started(kind: AttemptKind, db: Database, now: datetime, attempt: Row, epoch: int) -> bool:
    """True only when the Started write is confirmed committed; any doubt means do not send."""
    try:
        async with db.transaction() as conn:
            row = await fetch_one(conn, kind.rows.sql["mark_started"], {
                "attempt_id": attempt["attempt_id"], "epoch": epoch, "now": now})
            if row is not None:
                await kind.history(conn, attempt[kind.parent], "transition", actor=attempt["claimed_by"], now=now,
                                   attempt_id=attempt["attempt_id"],
                                   detail={"attempt_state": "Started", "lease_epoch": epoch})
                await advance(conn, attempt["attempt_id"], "Started", actor=attempt["claimed_by"], now=now)
    except Exception as error:  # noqa: BLE001 - an unconfirmed commit may have committed: do not send
        log.warning(f"{kind.name}_start_unconfirmed", attempt_id=str(attempt["attempt_id"]),
                    error_type=type(error).__name__)
        return False
    return row is not None


async def count_send(kind: AttemptKind, db: Database, now: datetime, attempt: Row, epoch: int) -> bool:
    """Re-check ownership and the send deadline right before a send; False: do not send."""
    try:
        async with db.transaction() as conn:
            row = await fetch_one(conn, kind.rows.sql["count_send"], {
                "attempt_id": attempt["attempt_id"], "epoch": epoch, "now": now})
    except Exception as error:  # noqa: BLE001 - unconfirmed: do not send
        log.warning(f"{kind.name}_send_unconfirmed", attempt_id=str(attempt["attempt_id"]),
                    error_type=type(error).__name__)
        return False
    return row is not None


async def resolve(kind: AttemptKind, conn: Connection, now: datetime, attempt: Row, state: AttemptState,
                  reason: str, *, actor: str, from_states: Sequence[AttemptState], epoch: int | None = None,
                  provider_id: str | None = None, provider_status: str | None = None,
                  next_check_at: datetime | None = None, certifier: Certifier | None = None) -> Row | None:
    """Move the attempt, then what follows it, in the caller's transaction; None when the attempt
    was no longer in ``from_states`` (or the epoch moved, or it recorded another provider id):
    nothing is written then. ``ProviderIdClaimed`` when ``provider_id`` is another attempt's: nothing
    is written either, and the caller's transaction stays usable (seed 004: escalate, keep both)."""
    row = await kind.rows.resolve(conn, attempt, {
        "attempt_id": attempt["attempt_id"], "state": state.value, "reason": reason, "now": now, "epoch": epoch,
        "from_states": [s.value for s in from_states], "provider_id": provider_id,
        "provider_status": provider_status, "next_check_at": next_check_at})
    if row is None:
        return None
    if state in FINAL_AFTER_CLAIM:
        # Seed 004, "Escalations": every writer that resolves an attempt resolves that attempt's
        # open escalations in the same transaction, so no reminder follows a settled attempt.
        await resolve_by_key_prefix(conn, escalation_key(kind.name, attempt["attempt_id"], ""), now,
                                    f"{kind.label} attempt {state.value} ({reason}) by {actor}")
    followed = await kind.follow(conn, now, row, state)
    await kind.history(conn, row[kind.parent], "transition", actor=actor, now=now, attempt_id=row["attempt_id"],
                       detail={"attempt_state": state.value, "reason": reason,
                               kind.rows.provider_id: row[kind.rows.provider_id], **followed})
    # Seed 001: the protocol follows the attempt; a confirmed effect is certified with ``certifier``.
    await advance(conn, attempt["attempt_id"], state.value, actor=actor, now=now, certifier=certifier,
                  subject=Subject(kind.parent, row[kind.parent], row[kind.rows.provider_id], row["provider_status"],
                                  kind.evidence))
    if provider_status == "returned" and kind.record_return is not None:
        await kind.record_return(conn, now, row, actor, True)  # completed, then returned: a later lifecycle event
    log.info(f"{kind.name}_attempt_resolved", parent_id=row[kind.parent], attempt_id=str(row["attempt_id"]),
             attempt_state=state.value, reason=reason, actor=actor)
    return row


async def escalate(kind: AttemptKind, conn: Connection, now: datetime, attempt: Row, problem: str, *,
                   reminder_interval_s: float, **facts: Any) -> int | None:
    """Open ``problem`` for the attempt (once while it is open; seed 000 section 2: payments
    operations own what reconciliation cannot resolve). Identifiers only, never a token or
    credential; the attempt is named in details (the escalation's attempt_id column references
    checkout attempts only)."""
    cause = problem.split(":")[0]
    details = {"attempt_id": str(attempt["attempt_id"]), kind.parent: attempt[kind.parent],
               "client_reference": attempt["client_reference"],
               kind.rows.provider_id: attempt[kind.rows.provider_id], **kind.escalation_facts(attempt), **facts}
    raised = await raise_escalation(conn, escalation_key=escalation_key(kind.name, attempt["attempt_id"], problem),
                                    reason=f"{kind.slug}-{cause}", now=now, reminder_interval_s=reminder_interval_s,
                                    details=details)
    log.warning(f"{kind.name}_escalated", reason=f"{kind.slug}-{cause}", parent_id=attempt[kind.parent],
                attempt_id=str(attempt["attempt_id"]))
    return raised


async def escalate_mismatch(kind: AttemptKind, conn: Connection, now: datetime, attempt: Row, found_id: str | None,
                            *, reminder_interval_s: float) -> int | None:
    """A provider record that is not the attempt's (seed 000 section 13: verify before trusting a
    found record; seed 004: a provider id other than the recorded one, or one another attempt holds,
    is never recorded): ``mismatch``, naming the attempt, the id it recorded (if any) and the one the
    evidence carried; the attempt is left as it is."""
    return await escalate(kind, conn, now, attempt, "mismatch", reminder_interval_s=reminder_interval_s,
                          **{f"found_{kind.rows.provider_id}": found_id})
