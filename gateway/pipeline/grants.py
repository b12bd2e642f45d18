"""Presenting a single-use grant (seed 000, "The Worker Validation Pipeline"): the checks of
``gateway.domain.grants.check_grant``, with the evidence each refusal carries, for every
grant-authorized attempt kind. A consumed grant says whether this delivery is a duplicate of the
one that claimed it."""

from __future__ import annotations

import uuid
from datetime import datetime

from gateway.domain.grants import NotYetValid, check_grant
from gateway.pipeline.kind import AttemptKind, Postponed, Presenter, Refused, Row
from gateway.store.db import Connection, fetch_one


async def presented_grant(kind: AttemptKind, conn: Connection, grant_id: str, *, subject_id: str,
                          presenter: Presenter, now: datetime) -> Row | Refused | Postponed:
    """The grant a delivery names, when it may be presented now; else why not (``grant.unknown``
    for an id that is not one of the kind's grants)."""
    try:
        parsed = uuid.UUID(grant_id)
    except ValueError:
        return Refused("grant.unknown")
    grant = await fetch_one(conn, kind.rows.sql["get_grant"], {"grant_id": parsed})
    if grant is None:
        return Refused("grant.unknown")
    return await _present(kind, conn, grant, subject_id=subject_id, presenter=presenter, now=now) or grant


async def _present(kind: AttemptKind, conn: Connection, grant: Row, *, subject_id: str, presenter: Presenter,
                        now: datetime) -> Refused | Postponed | None:
    """None when ``grant`` may be presented by ``presenter`` for ``subject_id`` now."""
    checked = check_grant(grant, subject_id=subject_id, subject_field=kind.parent, operation=kind.operation,
                          audiences=presenter.audiences, now=now)
    if checked is None:
        return None
    if isinstance(checked, NotYetValid):
        return Postponed("grant.not-yet-valid", checked.until)
    detail: dict[str, object] | None = None
    if checked == "binding.mismatch":
        detail = {f"message_{kind.parent}": subject_id}
    elif checked == "presenter.not-audience":
        detail = {"presenter": presenter.service_id}
    elif checked == "grant.consumed":
        attempt = await kind.rows.attempt_of_grant(conn, grant["grant_id"])
        detail = {"duplicate_delivery": attempt is not None and attempt[kind.parent] == subject_id,
                  "attempt_id": str(attempt["attempt_id"]) if attempt else None}
    return Refused(checked, grant, detail)
