"""What the pipeline counts about a delivery (seed 000 section 21, "Observability and Evidence":
"Validation refusals by reason code", "Claims lost, context-fence rollbacks, and duplicate
deliveries", "Unconfirmed commits and fenced Claimed attempts"). Counted in this
process after the fact it names is known, flushed to the fleet's sums by
``gateway.store.counters``; the evidence itself stays in the kind's history."""

from __future__ import annotations

from typing import Literal

from gateway import instruments
from gateway.pipeline.kind import AttemptKind, Postponed, Refused

CLAIM_LOST = "claim.lost"
CONTEXT_CHANGED = "claim.context-changed"


def postponed(kind: AttemptKind, delivery: Postponed) -> None:
    instruments.count(instruments.DELIVERIES_POSTPONED, kind=kind.name, reason=delivery.code)


def refused(kind: AttemptKind, delivery: Refused) -> None:
    """A refusal by validation or by the claim. A lost claim and a fence rollback have their own
    counters (the claim's two ways to lose); every other code is a validation refusal, and a
    consumed grant whose attempt is this subject's is also a duplicate delivery (section 9)."""
    if delivery.code == CLAIM_LOST:
        instruments.count(instruments.CLAIMS_LOST, kind=kind.name)
    elif delivery.code == CONTEXT_CHANGED:
        instruments.count(instruments.FENCE_ROLLBACKS, kind=kind.name)
    else:
        instruments.count(instruments.VALIDATION_REFUSALS, kind=kind.name, reason=delivery.code)
    if delivery.code == "grant.consumed" and (delivery.detail or {}).get("duplicate_delivery"):
        instruments.count(instruments.DUPLICATE_DELIVERIES, kind=kind.name)


def unconfirmed(kind: AttemptKind, step: Literal["claim", "start", "record"]) -> None:
    """A write whose commit could not be confirmed: nothing was sent on it (seed 000 section 10)."""
    instruments.count(instruments.UNCONFIRMED_WRITES, kind=kind.name, step=step)


def executed(kind: AttemptKind, state: str) -> None:
    """What the executor recorded for a claimed attempt (``Started``: sends exhausted, recovery follows)."""
    instruments.count(instruments.EXECUTIONS, kind=kind.name, state=state)


def fenced(kind: AttemptKind, state: str) -> None:
    """A lapsed lease the sweeper fenced: ``NotStarted`` (Claimed, nothing sent: the parent needs
    fresh authority) or ``Unknown`` (Started: the reconciler takes over)."""
    instruments.count(instruments.LEASES_FENCED, kind=kind.name, state=state)
