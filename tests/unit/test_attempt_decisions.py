"""The one rule every writer applies to evidence (seed 004: "Unknown never overwrites a known
outcome", provider payment ID set only when empty, mismatches and contradictions escalate, a
refund is a later lifecycle event, not a contradiction)."""

from __future__ import annotations

import pytest

from gateway.domain.attempts import AttemptFacts, Evidence, decide
from gateway.domain.outcomes import AttemptState

ACCOUNT = "cardco:acct_store:test"


def attempt(state: str, provider_id: str | None = None) -> AttemptFacts:
    return AttemptFacts(attempt_id="A1", state=AttemptState(state), provider_account=ACCOUNT, amount_minor=4250,
                        currency="EUR", provider_id=provider_id)


def evidence(finding: str, **extra: object) -> Evidence:
    return Evidence(finding=finding, provider_account=extra.pop("account", ACCOUNT), **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("state", ["Started", "Unknown"])
@pytest.mark.parametrize("finding, expected", [
    ("succeeded", "Succeeded"), ("failed", "Failed"), ("processing", "Started"),
    ("requires_action", "Started"), ("unknown", "Unknown"), ("refunded", "Succeeded"),
])
def test_live_attempts_take_what_the_evidence_says(state: str, finding: str, expected: str) -> None:
    assert decide(attempt(state), evidence(finding), only_send=True).new_state == expected


def test_a_no_effect_rejection_of_the_only_send_is_not_applied_but_of_a_resend_stays_unknown() -> None:
    """Seed 004 matrix: "A documented validation rejection of an attempt's only send records NotApplied";
    "a same-key resend rejected before execution leaves an attempt whose first send timed out Unknown"."""
    assert decide(attempt("Started"), evidence("rejected", reason="invalid_request"), only_send=True).new_state == "NotApplied"
    assert decide(attempt("Unknown"), evidence("rejected", reason="rate_limited"), only_send=False).new_state == "Unknown"


@pytest.mark.parametrize("state", ["Succeeded", "Failed", "NotApplied"])
def test_unknown_never_overwrites_a_known_outcome(state: str) -> None:
    """Seed 004 matrix: "A notification that arrives before the endpoint records its timeout wins"."""
    decision = decide(attempt(state, "pay_1"), evidence("unknown"), only_send=True)
    assert decision.new_state is None and decision.escalation is None


def test_a_refund_after_success_is_a_lifecycle_event_not_a_contradiction() -> None:
    decision = decide(attempt("Succeeded", "pay_1"), evidence("refunded", provider_id="pay_1"), only_send=True)
    assert decision.new_state is None and decision.escalation is None
    assert decision.effects == ("refund-notice",)


@pytest.mark.parametrize("state, finding", [("Succeeded", "failed"), ("Failed", "succeeded"), ("NotApplied", "succeeded")])
def test_an_incompatible_outcome_escalates_instead_of_overwriting(state: str, finding: str) -> None:
    decision = decide(attempt(state), evidence(finding, evidence_key="evt_9"), only_send=True)
    assert decision.new_state is None
    assert decision.escalation is not None and decision.escalation.key == "attempt:A1:contradiction:evt_9"


def test_a_different_provider_payment_id_is_a_contradiction_and_replaces_nothing() -> None:
    decision = decide(attempt("Unknown", "pay_1"), evidence("succeeded", provider_id="pay_2"), only_send=True)
    assert decision.new_state is None and not decision.record_provider_id
    assert decision.escalation is not None and decision.escalation.key == "attempt:A1:contradiction"


def test_the_provider_payment_id_is_recorded_only_when_empty() -> None:
    assert decide(attempt("Started"), evidence("succeeded", provider_id="pay_1"), only_send=True).record_provider_id
    assert not decide(attempt("Started", "pay_1"), evidence("succeeded", provider_id="pay_1"),
                      only_send=True).record_provider_id


@pytest.mark.parametrize("mismatch", [{"amount_minor": 4251}, {"currency": "USD"}, {"account": "cardco:acct_store:live"}])
def test_amount_currency_or_account_mismatch_escalates_and_resolves_nothing(mismatch: dict[str, object]) -> None:
    """Seed 004 matrix: "A notification with ... a mismatched amount, or the wrong account or environment
    raises an alert and resolves nothing"."""
    decision = decide(attempt("Unknown"), evidence("succeeded", **mismatch), only_send=True)
    assert decision.new_state is None
    assert decision.escalation is not None and decision.escalation.reason == "mismatch"


def test_success_queues_the_confirmation_and_clears_the_action() -> None:
    decision = decide(attempt("Started"), evidence("succeeded"), only_send=True)
    assert decision.effects == ("order-confirmation",) and decision.clear_action and decision.resolves


def test_requires_action_stores_the_action() -> None:
    decision = decide(attempt("Unknown"), evidence("requires_action", next_action={"type": "redirect_to_url"}),
                      only_send=False)
    assert decision.new_state == "Started" and decision.store_action


def test_evidence_about_a_never_sent_attempt_escalates() -> None:
    assert decide(attempt("NotStarted"), evidence("succeeded"), only_send=False).escalation is not None


def test_an_unknown_that_clears_a_stored_action_asks_for_a_lookup_at_once() -> None:
    """The endpoint's timeout clears a challenge the provider may still wait for,
    so the attempt is due for a lookup now; without a stored action it waits for its backoff."""
    challenged = AttemptFacts(attempt_id="A1", state=AttemptState.STARTED, provider_account=ACCOUNT, amount_minor=4250,
                              currency="EUR", provider_id="pay_1", has_action=True)
    cleared = decide(challenged, evidence("unknown", reason="provider.no-response.caller"), only_send=True)
    assert (cleared.new_state, cleared.clear_action, cleared.look_up_now) == ("Unknown", True, True)
    assert not decide(attempt("Started"), evidence("unknown"), only_send=True).look_up_now


@pytest.mark.parametrize("finding, status", [("unknown", None), ("rejected", None), ("processing", "processing"),
                                             ("requires_action", "requires_action"), ("failed", "failed")])
def test_every_recorded_state_writes_its_own_provider_status(finding: str, status: str | None) -> None:
    """A state change writes the status that goes with it (None clears the old
    one), so ``provider_status`` never shows what the recorded state contradicts."""
    decision = decide(attempt("Started"), evidence(finding), only_send=False)
    assert decision.sets_status and decision.provider_status == status


@pytest.mark.parametrize("state", ["Started", "Unknown"])
def test_a_key_in_use_answer_stays_unknown_and_escalates_once_per_attempt(state: str) -> None:
    """Docs/decisions/0009: 409 ``idempotency_key_in_use`` (our key with other
    parameters) is not an outcome: the attempt is Unknown and a person is told, under one key
    per attempt so every further 409 joins the open episode."""
    decision = decide(attempt(state), evidence("key_in_use", reason="provider.idempotency-key-in-use"), only_send=True)
    assert (decision.new_state, decision.outcome_reason) == ("Unknown", "provider.idempotency-key-in-use")
    assert decision.escalation is not None
    assert (decision.escalation.key, decision.escalation.reason) == ("attempt:A1:idempotency-key-in-use",
                                                                     "idempotency-key-in-use")


def test_a_key_in_use_answer_never_overwrites_a_known_outcome() -> None:
    assert decide(attempt("Succeeded"), evidence("key_in_use"), only_send=False).new_state is None
