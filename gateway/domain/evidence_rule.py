"""The one rule for applying provider evidence to an attempt of any kind: a checkout payment, a
payout, a recall or a refund, whether the evidence is a send's answer, a notification or a lookup
(seed 004, "The Notification Handler" and "Persisting the Attempt"; seed 000, "Reconcile Before
Any New Attempt": a late response or notification "may resolve ATT-1 through the same narrow
evidence write").

Evidence is first read into :class:`Seen`, in the outcome vocabulary (gateway.domain.outcomes):
the state it establishes, the provider id it carries, whether it is the attempt's at all, and
whether it is a later lifecycle event after success (a refund of a payment, a return of a payout).
:func:`verdict` then says what it means for the attempt as it stands:

- a record that is not the attempt's (reference, amount, currency or account differ) is a
  ``mismatch``, and one naming another provider id than the recorded one is ``other-id`` (seed 004:
  "it never silently replaces the recorded ID"); both are escalated, nothing is applied; except
  that a send's own answer carrying a record that is not the attempt's makes the attempt its sender
  still owns Unknown (the request reached the provider, or may have, and the answer proves
  nothing about it; seed 000 §11: what is not documented as no-effect is Unknown): the reconciler
  looks it up at once and escalates a mismatch it finds (seed 000 §13);
- evidence about an attempt no cooperating sender transmitted (Claimed, NotStarted) contradicts
  the Started rule;
- an attempt in flight (Started, Unknown) takes what the evidence establishes: a settled outcome
  from either, Started (accepted, not done) from Unknown, Unknown (not yet known) from Started; a
  repeat of its in-flight state is already recorded, unless it is the answer to the send of the
  writer that owns the attempt (``Seen.sender``): that answer hands the attempt on in the state it
  establishes, Started written again with the provider id it names and the first status check
  (seed 000 §11: "Provider accepted the request for asynchronous processing: Started ... wait for
  a status check or notification");
- a settled attempt is never overwritten: Unknown evidence keeps it ("Unknown never overwrites a
  known outcome"), a repeat of its outcome keeps it, and so does the other no-effect outcome
  (Failed and NotApplied agree that the money did not move); an earlier lifecycle step (accepted,
  after Succeeded or Failed) arriving late is stale; a later lifecycle event after success is
  recorded without contradicting it; anything else is a contradiction, escalated.

What each kind writes for a verdict (its history, its customer's next action, its outbox effects,
the name its escalation keys give ``other-id``) is the kind's own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from gateway.domain.outcomes import IN_FLIGHT, MISMATCH, NEVER_SENT, AttemptState, Classification, replaces_recorded_id

S = AttemptState
NO_EFFECT = frozenset({S.FAILED, S.NOT_APPLIED})


@dataclass(frozen=True)
class Seen:
    """What one piece of evidence establishes about an attempt: ``state`` (Succeeded, Failed,
    NotApplied; Started: accepted, not done; Unknown: not yet known), the provider id it names,
    ``matches`` (its reference, amount, currency and account are the attempt's), ``later``
    (a lifecycle event after success: its ``state`` is Succeeded) and ``sender`` (it is the answer
    to a send, read by the writer that sent it and still owns the attempt: the pipeline's executor
    under the lease epoch of its claim; see :func:`answered`)."""

    state: AttemptState
    provider_id: str | None = None
    matches: bool = True
    later: bool = False
    sender: bool = False


def classified(record: Classification) -> Seen:
    """A provider record as a pipeline kind's table classified it (a notification's object, a
    lookup's record): one that is not the attempt's is a mismatch, a returned payout a later event."""
    return Seen(record.state, record.provider_id, matches=record.row is not MISMATCH, later=record.returned)


def answered(answer: Classification, *, owner: bool) -> Seen:
    """A pipeline send's answer as the kind's table classified it (seed 000 §11), read by the
    executor that sent it: a piece of evidence like a notification or a lookup (seed 004, "Persisting
    the Attempt": the provider id "is recorded by the first evidence that carries it, whether a
    response, a notification, or a lookup"), the sender's while it still ``owner``s the attempt (its
    lease epoch is the attempt's). An answer that arrives after the sweeper fenced the sender is
    a late response: seed 000 §13, it "may resolve ATT-1 through the same narrow evidence write,
    conditional on the attempt still being Unknown ... it does not restore any worker's ownership"."""
    return replace(classified(answer), sender=owner)


@dataclass(frozen=True)
class Write:
    """The conditional transition to ``state``, from exactly ``from_states``."""

    state: AttemptState
    from_states: tuple[AttemptState, ...]


@dataclass(frozen=True)
class Keep:
    """Nothing to transition: the evidence agrees with the attempt, or is an older step."""

    reason: Literal["already-recorded", "stale"]


@dataclass(frozen=True)
class Later:
    """A lifecycle event after success (a refund, a return): recorded, the attempt stays Succeeded."""


@dataclass(frozen=True)
class Escalate:
    cause: Literal["mismatch", "other-id", "contradiction"]


Verdict = Write | Keep | Later | Escalate


def verdict(state: AttemptState, recorded_id: str | None, seen: Seen) -> Verdict:
    """What ``seen`` means for an attempt in ``state`` that recorded ``recorded_id``; see the module docstring."""
    if not seen.matches:
        return Write(S.UNKNOWN, (state,)) if seen.sender and state in IN_FLIGHT else Escalate("mismatch")
    if replaces_recorded_id(recorded_id, seen.provider_id):
        return Escalate("other-id")
    if state in NEVER_SENT:
        return Escalate("contradiction")
    if state in IN_FLIGHT:
        if seen.state in IN_FLIGHT:
            if seen.state is state and not seen.sender:
                return Keep("already-recorded")
            return Write(seen.state, (state,))
        return Write(seen.state, IN_FLIGHT)
    if seen.state is S.UNKNOWN:
        return Keep("already-recorded")
    if seen.state is S.STARTED:
        return Keep("stale") if state in (S.SUCCEEDED, S.FAILED) else Escalate("contradiction")
    if seen.state is S.SUCCEEDED and state is S.SUCCEEDED:
        return Later() if seen.later else Keep("already-recorded")
    if seen.state in NO_EFFECT and state in NO_EFFECT:
        return Keep("already-recorded")
    return Escalate("contradiction")
