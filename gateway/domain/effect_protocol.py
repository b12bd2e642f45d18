"""The effect-before-persistence protocol states and their transition table (seed 001, "A durable
control protocol"), and how they follow the attempt states of seeds 004 and 000.

The table is the seed's, plus three edges the seed's illustration leaves out and these attempts
need (docs/decisions/0012-effect-protocol-states.md):

- POLICY_EVALUATED -> APPROVED: a decision that needs no approval (a checkout; an Allowed payout);
- INTENT_PERSISTED -> EFFECT_FAILED: the attempt provably never reached the provider (a checkout
  closed as never-sent, a payout claim that lapsed before Started);
- AUTHORIZATION_ISSUED -> OUTCOME_UNKNOWN: the send was authorized and the attempt is Unknown.

Protocol state is derived, never chosen: :func:`path` gives the states to append when an attempt
moves, and :func:`check` refuses anything the table does not allow. Pure: no I/O.
"""

from __future__ import annotations

from collections import deque
from enum import StrEnum

from gateway.domain.attempt_kinds import KINDS
from gateway.domain.effect_manifest import AttemptKind


class ProtocolState(StrEnum):
    PROPOSED = "PROPOSED"
    POLICY_EVALUATED = "POLICY_EVALUATED"
    PENDING_APPROVAL = "PENDING_APPROVAL"
    APPROVED = "APPROVED"
    INTENT_PERSISTED = "INTENT_PERSISTED"
    AUTHORIZATION_ISSUED = "AUTHORIZATION_ISSUED"
    EXECUTING = "EXECUTING"
    EFFECT_CONFIRMED = "EFFECT_CONFIRMED"
    EFFECT_FAILED = "EFFECT_FAILED"
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    RECONCILING = "RECONCILING"
    CERTIFIED = "CERTIFIED"


P = ProtocolState

TRANSITIONS: dict[ProtocolState | None, frozenset[ProtocolState]] = {
    None: frozenset({P.PROPOSED}),
    P.PROPOSED: frozenset({P.POLICY_EVALUATED}),
    P.POLICY_EVALUATED: frozenset({P.PENDING_APPROVAL, P.APPROVED}),
    P.PENDING_APPROVAL: frozenset({P.APPROVED}),
    P.APPROVED: frozenset({P.INTENT_PERSISTED}),
    P.INTENT_PERSISTED: frozenset({P.AUTHORIZATION_ISSUED, P.EFFECT_FAILED}),
    P.AUTHORIZATION_ISSUED: frozenset({P.EXECUTING, P.OUTCOME_UNKNOWN}),
    P.EXECUTING: frozenset({P.EFFECT_CONFIRMED, P.EFFECT_FAILED, P.OUTCOME_UNKNOWN}),
    P.OUTCOME_UNKNOWN: frozenset({P.RECONCILING}),
    P.RECONCILING: frozenset({P.EFFECT_CONFIRMED, P.EFFECT_FAILED, P.OUTCOME_UNKNOWN}),
    P.EFFECT_CONFIRMED: frozenset({P.CERTIFIED}),
    P.EFFECT_FAILED: frozenset(),
    P.CERTIFIED: frozenset(),
}

# Which attempt states each protocol state is consistent with, per kind of attempt. The states
# before INTENT_PERSISTED exist only in the ledger: the record is born at INTENT_PERSISTED.
_PAYMENT_STATES: dict[ProtocolState, frozenset[str]] = {
    P.INTENT_PERSISTED: frozenset({"NotStarted"}),
    P.AUTHORIZATION_ISSUED: frozenset({"Started"}),
    P.EXECUTING: frozenset({"Started"}),
    P.OUTCOME_UNKNOWN: frozenset({"Unknown"}),
    P.RECONCILING: frozenset({"Unknown", "Started"}),
    P.EFFECT_CONFIRMED: frozenset({"Succeeded"}),
    P.CERTIFIED: frozenset({"Succeeded"}),
    P.EFFECT_FAILED: frozenset({"Failed", "NotApplied"}),
}
# An attempt of the pipeline is Claimed before Started, and NotStarted when its claim lapsed unsent;
# a recall has the payout attempt's states (docs/decisions/0015, choice 6), and so has a payment
# refund (docs/decisions/0019).
_PIPELINE_STATES: dict[ProtocolState, frozenset[str]] = {
    **_PAYMENT_STATES, P.INTENT_PERSISTED: frozenset({"Claimed"}),
    P.EFFECT_FAILED: frozenset({"Failed", "NotApplied", "NotStarted"})}
CONSISTENT: dict[AttemptKind, dict[ProtocolState, frozenset[str]]] = {
    kind.name: _PIPELINE_STATES if kind.pipeline else _PAYMENT_STATES for kind in KINDS}


class TransitionRefused(ValueError):
    """The protocol table does not allow this transition."""


def check(current: ProtocolState | None, target: ProtocolState) -> None:
    if target not in TRANSITIONS[current]:
        raise TransitionRefused(f"{current} -> {target} is not a protocol transition")


def target(kind: AttemptKind, current: ProtocolState, attempt_state: str) -> ProtocolState:
    """The protocol state an attempt in ``attempt_state`` is in, given where the protocol stands.

    Started first means the send is authorized (EXECUTING is the send gate's to record); after an
    unknown outcome, a provider still processing means the reconciliation goes on; Unknown after a
    reconciliation step means it ended indeterminate; a certified effect stays certified.
    """
    if attempt_state == "Started":
        if current in (P.AUTHORIZATION_ISSUED, P.EXECUTING):
            return current
        return P.RECONCILING if current in (P.OUTCOME_UNKNOWN, P.RECONCILING) else P.AUTHORIZATION_ISSUED
    for state in (P.INTENT_PERSISTED, P.OUTCOME_UNKNOWN, P.EFFECT_CONFIRMED, P.EFFECT_FAILED):
        if attempt_state in CONSISTENT[kind][state]:
            return current if (state, current) == (P.EFFECT_CONFIRMED, P.CERTIFIED) else state
    raise TransitionRefused(f"{kind} attempt state {attempt_state!r} has no protocol state")


def path(current: ProtocolState, goal: ProtocolState) -> tuple[ProtocolState, ...]:
    """The shortest sequence of allowed transitions from ``current`` to ``goal`` (empty when they
    are the same); refused when the table offers none, e.g. back from a final state."""
    if current == goal:
        return ()
    came_from: dict[ProtocolState, ProtocolState] = {}
    queue = deque([current])
    while queue:
        state = queue.popleft()
        for following in sorted(TRANSITIONS[state]):
            if following in came_from or following == current:
                continue
            came_from[following] = state
            if following == goal:
                steps = [goal]
                while came_from[steps[-1]] != current:
                    steps.append(came_from[steps[-1]])
                return tuple(reversed(steps))
            queue.append(following)
    raise TransitionRefused(f"no protocol path from {current} to {goal}")


def follow(kind: AttemptKind, current: ProtocolState, attempt_state: str) -> tuple[ProtocolState, ...]:
    """The states to append when the attempt is now in ``attempt_state``."""
    return path(current, target(kind, current, attempt_state))
