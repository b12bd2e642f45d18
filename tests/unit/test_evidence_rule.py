"""The one rule for applying provider evidence to an attempt of any kind (seed 004, "The
Notification Handler": Unknown never overwrites a known outcome, a different provider id is never
accepted, a later lifecycle event does not contradict success, an incompatible outcome escalates;
seed 000, "Classify the Outcome": what no row documents is Unknown). Checkout's decisions and the
pipeline's notifications and reconciler read their evidence into it; these rows are the rule's,
the kinds' own tables (tests/unit/test_attempt_decisions.py, test_payout_notifications.py) say
how each writes it."""

from __future__ import annotations

import pytest

from gateway.domain import attempts
from gateway.domain.evidence_rule import Escalate, Keep, Later, Seen, Write, verdict
from gateway.domain.outcomes import IN_FLIGHT, AttemptState

S = AttemptState


@pytest.mark.parametrize(("state", "seen", "expected"), [
    (S.STARTED, S.SUCCEEDED, Write(S.SUCCEEDED, IN_FLIGHT)),
    (S.UNKNOWN, S.NOT_APPLIED, Write(S.NOT_APPLIED, IN_FLIGHT)),
    (S.UNKNOWN, S.STARTED, Write(S.STARTED, (S.UNKNOWN,))),
    (S.STARTED, S.UNKNOWN, Write(S.UNKNOWN, (S.STARTED,))),
    (S.UNKNOWN, S.UNKNOWN, Keep("already-recorded")),
    (S.FAILED, S.UNKNOWN, Keep("already-recorded")),
    (S.NOT_APPLIED, S.FAILED, Keep("already-recorded")),
    (S.FAILED, S.NOT_APPLIED, Keep("already-recorded")),
    (S.FAILED, S.STARTED, Keep("stale")),
    (S.NOT_APPLIED, S.STARTED, Escalate("contradiction")),
    (S.SUCCEEDED, S.FAILED, Escalate("contradiction")),
    (S.NOT_STARTED, S.UNKNOWN, Escalate("contradiction")),
])
def test_each_state_and_what_the_evidence_establishes(state: AttemptState, seen: AttemptState, expected: object) -> None:
    assert verdict(state, None, Seen(seen)) == expected


def test_a_later_event_after_success_is_recorded_and_before_it_is_the_success() -> None:
    assert verdict(S.SUCCEEDED, "p1", Seen(S.SUCCEEDED, "p1", later=True)) == Later()
    assert verdict(S.UNKNOWN, None, Seen(S.SUCCEEDED, "p1", later=True)) == Write(S.SUCCEEDED, IN_FLIGHT)


def test_what_is_not_the_attempts_escalates_before_anything_else() -> None:
    assert verdict(S.NOT_STARTED, None, Seen(S.SUCCEEDED, matches=False)) == Escalate("mismatch")
    assert verdict(S.UNKNOWN, "p1", Seen(S.SUCCEEDED, "p2")) == Escalate("other-id")
    assert verdict(S.UNKNOWN, "p1", Seen(S.SUCCEEDED, "p1")) == Write(S.SUCCEEDED, IN_FLIGHT)


def _checkout(state: AttemptState, finding: str) -> attempts.Decision:
    facts = attempts.AttemptFacts(attempt_id="A1", state=state, provider_account="cardco:a:test", amount_minor=1,
                                  currency="EUR", provider_id=None)
    return attempts.decide(facts, attempts.Evidence(finding=finding, provider_account="cardco:a:test",  # type: ignore[arg-type]
                                                    evidence_key="evt_1"), only_send=True)


@pytest.mark.parametrize(("state", "finding"), [(S.FAILED, "processing"), (S.NOT_APPLIED, "failed"),
                                                (S.SUCCEEDED, "requires_action")])
def test_checkout_keeps_what_agrees_with_its_settled_outcome_as_the_pipeline_does(state: AttemptState,
                                                                                  finding: str) -> None:
    """An older step after a settled outcome (processing after Failed), or the other no-effect
    outcome (failed after NotApplied), changes nothing and alerts nobody, for checkout as for the
    pipeline (docs/decisions/0066: before the one rule, checkout escalated both as contradictions)."""
    assert _checkout(state, finding) == attempts.IGNORE


def test_checkout_names_another_provider_id_a_contradiction() -> None:
    """Seed 004: "treat a different ID for the same attempt as a contradiction escalation"."""
    facts = attempts.AttemptFacts(attempt_id="A1", state=S.UNKNOWN, provider_account="cardco:a:test", amount_minor=1,
                                  currency="EUR", provider_id="p1")
    decision = attempts.decide(facts, attempts.Evidence(finding="succeeded", provider_account="cardco:a:test",
                                                        provider_id="p2"), only_send=True)
    assert decision.escalation is not None and decision.escalation.key == "attempt:A1:contradiction"


@pytest.mark.parametrize(("state", "seen", "expected"), [
    (S.STARTED, Seen(S.STARTED, "p1", sender=True), Write(S.STARTED, (S.STARTED,))),
    (S.STARTED, Seen(S.STARTED, "p1"), Keep("already-recorded")),
    (S.STARTED, Seen(S.UNKNOWN, matches=False, sender=True), Write(S.UNKNOWN, (S.STARTED,))),
    (S.STARTED, Seen(S.UNKNOWN, matches=False), Escalate("mismatch")),
    (S.STARTED, Seen(S.SUCCEEDED, "p1", sender=True), Write(S.SUCCEEDED, IN_FLIGHT)),
    (S.SUCCEEDED, Seen(S.FAILED, "p1", sender=True), Escalate("contradiction")),
])
def test_a_send_answer_read_by_the_sender_that_owns_the_attempt_hands_it_on(state: AttemptState, seen: Seen,
                                                                            expected: object) -> None:
    """Seed 000 §11: an accepted answer leaves the attempt Started, to "wait for a status check or
    notification": the sender's Started is written again with the provider id it names (another
    writer's repeat of Started is already recorded), and a record in the answer that is not the
    attempt's proves nothing about the request that reached the provider: Unknown, which the
    reconciler looks up and escalates if it finds the mismatch (§13), where evidence from any other
    source escalates at once. Past its sender the answer is evidence like any other."""
    assert verdict(state, None, seen) == expected
