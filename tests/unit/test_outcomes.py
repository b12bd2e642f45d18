"""One outcome vocabulary for every attempt kind (seed 004, "The Attempt Row"; seed 000, "Classify
the Outcome by What the Provider Can Prove"): checkout's decisions and the pipeline's
classifications speak the same :class:`AttemptState`, and the operator API's state filters spell
its values and no others."""

from __future__ import annotations

from typing import get_args

from gateway.domain import attempts
from gateway.domain.outcomes import FINAL_AFTER_CLAIM, IN_FLIGHT, NEVER_SENT, SETTLED, AttemptState
from gateway.payments.operator import StateFilter as CheckoutFilter
from gateway.payouts.operator import StateFilter as PipelineFilter


def test_the_api_filters_spell_the_one_attempt_state() -> None:
    assert set(get_args(PipelineFilter)) == {state.value for state in AttemptState}
    # A checkout attempt is never claimed: it is sent inside the customer's request.
    assert set(get_args(CheckoutFilter)) == {state.value for state in AttemptState} - {AttemptState.CLAIMED.value}


def test_the_state_sets_partition_what_a_claimed_attempt_can_be() -> None:
    assert SETTLED | set(IN_FLIGHT) | NEVER_SENT == set(AttemptState)
    assert not SETTLED & set(IN_FLIGHT) and not SETTLED & NEVER_SENT and not set(IN_FLIGHT) & NEVER_SENT
    assert FINAL_AFTER_CLAIM == SETTLED | {AttemptState.NOT_STARTED}


def test_checkout_decisions_write_the_shared_states() -> None:
    """A checkout decision's new state is one of the shared states, never a string of its own."""
    facts = attempts.AttemptFacts(attempt_id="A1", state=AttemptState.STARTED, provider_account="cardco:a:test",
                                  amount_minor=1, currency="EUR", provider_id=None)
    decision = attempts.decide(facts, attempts.Evidence(finding="unknown", provider_account="cardco:a:test"),
                               only_send=True)
    assert decision.new_state is AttemptState.UNKNOWN
