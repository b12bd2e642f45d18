"""What a verified CardCo payout notification does to the attempt it names (API.md, "Provider
notifications": ``payout.processing``, ``payout.paid``, ``payout.failed``, ``payout.returned``;
seed 000, "Reconcile Before Any New Attempt": "If the provider's late response or notification
reaches the platform first, it may resolve ATT-1 through the same narrow evidence write").

A pure function of the attempt's recorded state and the notification's classification (the same
versioned table the executor and reconciler use, ``outcomes``). It never overwrites a final
state: evidence that agrees is ignored, stale evidence (``processing`` after an outcome) is
ignored, and evidence that disagrees is escalated as a contradiction (seed 004, "Escalations":
``attempt:<id>:contradiction:<notification key>``). A record that is not this attempt's
(reference, amount, currency or provider id differ) is a mismatch. A return after completion is a
separate lifecycle event, never a failure ("A return is not a rejection").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.domain.outcomes import IN_FLIGHT, MISMATCH, NEVER_SENT, AttemptState, Classification, replaces_recorded_id

S = AttemptState


@dataclass(frozen=True)
class Resolve:
    """The conditional transition ``attempts.resolve`` writes, from exactly these states."""

    state: AttemptState
    from_states: tuple[AttemptState, ...]


@dataclass(frozen=True)
class RecordReturn:
    """A Succeeded attempt's payout came back: a ``return`` event, the attempt stays Succeeded."""


@dataclass(frozen=True)
class Ignore:
    reason: Literal["already-recorded", "stale"]


@dataclass(frozen=True)
class Escalate:
    cause: Literal["mismatch", "contradiction"]


Action = Resolve | RecordReturn | Ignore | Escalate


def decide(state: AttemptState, recorded_provider_id: str | None, seen: Classification) -> Action:
    """The action for one notification about an attempt in ``state``."""
    if seen.row is MISMATCH or replaces_recorded_id(recorded_provider_id, seen.provider_id):
        return Escalate("mismatch")
    if state in NEVER_SENT:
        return Escalate("contradiction")
    announced = seen.state
    if state in IN_FLIGHT:
        if announced is S.STARTED:  # processing: an Unknown attempt was accepted; reconciliation goes on
            return Resolve(S.STARTED, (S.UNKNOWN,)) if state is S.UNKNOWN else Ignore("already-recorded")
        if announced in (S.SUCCEEDED, S.FAILED):
            return Resolve(announced, IN_FLIGHT)
        return Escalate("contradiction")  # no other row can come from a readable payout status
    if announced is S.STARTED:
        return Ignore("stale") if state in (S.SUCCEEDED, S.FAILED) else Escalate("contradiction")
    if state is S.SUCCEEDED and announced is S.SUCCEEDED:
        return RecordReturn() if seen.returned else Ignore("already-recorded")
    if announced is S.FAILED and state in (S.FAILED, S.NOT_APPLIED):
        return Ignore("already-recorded")  # no effect, as recorded
    return Escalate("contradiction")  # e.g. paid after Failed or NotApplied, failed after Succeeded
