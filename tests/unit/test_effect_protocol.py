"""Seed 001, "A durable control protocol": the transition table, walked edge by edge, and how the
protocol follows the attempt states of seeds 004 and 000 (docs/decisions/0012)."""

from __future__ import annotations

import itertools

import pytest

from gateway.domain.effect_protocol import (
    CONSISTENT,
    TRANSITIONS,
    ProtocolState,
    TransitionRefused,
    check,
    follow,
)

P = ProtocolState
SEED_EDGES = {
    (None, P.PROPOSED), (P.PROPOSED, P.POLICY_EVALUATED), (P.POLICY_EVALUATED, P.PENDING_APPROVAL),
    (P.PENDING_APPROVAL, P.APPROVED), (P.APPROVED, P.INTENT_PERSISTED), (P.INTENT_PERSISTED, P.AUTHORIZATION_ISSUED),
    (P.AUTHORIZATION_ISSUED, P.EXECUTING), (P.EXECUTING, P.EFFECT_CONFIRMED), (P.EXECUTING, P.EFFECT_FAILED),
    (P.EXECUTING, P.OUTCOME_UNKNOWN), (P.OUTCOME_UNKNOWN, P.RECONCILING), (P.RECONCILING, P.EFFECT_CONFIRMED),
    (P.RECONCILING, P.EFFECT_FAILED), (P.RECONCILING, P.OUTCOME_UNKNOWN), (P.EFFECT_CONFIRMED, P.CERTIFIED),
}
EXTENSIONS = {(P.POLICY_EVALUATED, P.APPROVED), (P.INTENT_PERSISTED, P.EFFECT_FAILED),
              (P.AUTHORIZATION_ISSUED, P.OUTCOME_UNKNOWN)}
ALLOWED = SEED_EDGES | EXTENSIONS
EVERY_PAIR = list(itertools.product([None, *ProtocolState], ProtocolState))


def test_the_table_is_the_seeds_plus_three_documented_extensions() -> None:
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == ALLOWED


@pytest.mark.parametrize(("current", "following"), sorted(ALLOWED, key=str))
def test_every_allowed_transition_is_accepted(current: ProtocolState | None, following: ProtocolState) -> None:
    check(current, following)


@pytest.mark.parametrize(("current", "following"), [pair for pair in EVERY_PAIR if pair not in ALLOWED])
def test_every_other_transition_is_refused(current: ProtocolState | None, following: ProtocolState) -> None:
    """Nothing else: no going back, no skipping INTENT_PERSISTED, nothing after a final state."""
    with pytest.raises(TransitionRefused):
        check(current, following)


@pytest.mark.parametrize(("kind", "start", "states", "ledger"), [
    ("payment", P.INTENT_PERSISTED, ["Started"], [P.AUTHORIZATION_ISSUED]),
    ("payment", P.EXECUTING, ["Succeeded"], [P.EFFECT_CONFIRMED]),
    ("payment", P.EXECUTING, ["Started", "Unknown", "Started", "Succeeded"],
     [P.OUTCOME_UNKNOWN, P.RECONCILING, P.EFFECT_CONFIRMED]),
    ("payment", P.INTENT_PERSISTED, ["NotApplied"], [P.EFFECT_FAILED]),
    ("payment", P.AUTHORIZATION_ISSUED, ["Unknown"], [P.OUTCOME_UNKNOWN]),
    ("payment", P.RECONCILING, ["Unknown"], [P.OUTCOME_UNKNOWN]),
    ("payment", P.CERTIFIED, ["Succeeded"], []),
    ("payout", P.INTENT_PERSISTED, ["NotStarted"], [P.EFFECT_FAILED]),
    ("payout", P.EXECUTING, ["Unknown", "NotApplied"], [P.OUTCOME_UNKNOWN, P.RECONCILING, P.EFFECT_FAILED]),
    ("payout", P.EXECUTING, ["Started", "Failed"], [P.EFFECT_FAILED]),
])
def test_the_protocol_follows_the_attempt_states(kind: str, start: ProtocolState, states: list[str],
                                                 ledger: list[ProtocolState]) -> None:
    current, appended = start, []
    for state in states:
        steps = follow(kind, current, state)  # type: ignore[arg-type]
        appended.extend(steps)
        current = steps[-1] if steps else current
        assert state in CONSISTENT[kind][current] or current is P.RECONCILING  # type: ignore[index]
    assert appended == ledger


def test_a_final_state_never_moves_back() -> None:
    with pytest.raises(TransitionRefused):
        follow("payment", P.EFFECT_FAILED, "Succeeded")
    with pytest.raises(TransitionRefused):
        follow("payout", P.CERTIFIED, "Unknown")
