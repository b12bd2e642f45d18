"""The recovery loop's branches as pure decisions (seed 004, "The Recovery Loop")."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from gateway.domain.recovery import (
    AttemptView,
    ResendConditions,
    Step,
    Timings,
    after_not_found,
    backoff_s,
    final_check,
    first_step,
)

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
TIMINGS = Timings(abandonment_threshold_s=60, call_budget_s=15, record_budget_s=5, processing_allowance_s=10,
                  lookup_backoff_s=(60, 120, 300, 900), readonly_cadence_s=900)
OK = ResendConditions(order_payable=True, request_buildable=True, payment_method_usable=True, request_unchanged=True)


def attempt(state: str = "Unknown", *, created_s_ago: float = 600, sent_s_ago: float | None = 600,
            deadline_in_s: float = 3600, action_expires_in_s: float | None = None, passes: int = 0) -> AttemptView:
    return AttemptView(
        state=state, created_at=NOW - timedelta(seconds=created_s_ago),
        first_sent_at=None if sent_s_ago is None else NOW - timedelta(seconds=sent_s_ago),
        escalation_deadline=NOW + timedelta(seconds=deadline_in_s),
        next_action={"type": "redirect_to_url"} if action_expires_in_s is not None else None,
        next_action_expires_at=None if action_expires_in_s is None else NOW + timedelta(seconds=action_expires_in_s),
        passes=passes)


def test_a_stale_not_started_is_closed_and_a_young_one_waits_out_the_threshold() -> None:
    assert first_step(attempt("NotStarted", created_s_ago=60, sent_s_ago=None), TIMINGS, NOW).kind == "close-never-sent"
    young = first_step(attempt("NotStarted", created_s_ago=45, sent_s_ago=None), TIMINGS, NOW)
    assert (young.kind, young.delay_s) == ("finish", 15)


def test_a_current_action_waits_for_the_earlier_of_expiry_and_the_next_check() -> None:
    step = first_step(attempt("Started", action_expires_in_s=30), TIMINGS, NOW)
    assert (step.kind, step.delay_s) == ("finish", 30)
    step = first_step(attempt("Started", action_expires_in_s=3000, passes=1), TIMINGS, NOW)
    assert (step.kind, step.delay_s) == ("finish", 120)


def test_a_current_action_past_the_deadline_escalates_and_schedules() -> None:
    """Seed 004 matrix: "An attempt waiting for customer action past its escalation deadline
    escalates and schedules in one transaction"."""
    step = first_step(attempt("Started", action_expires_in_s=30, deadline_in_s=0), TIMINGS, NOW)
    assert (step.kind, step.reason, step.delay_s) == ("escalate-and-finish", "deadline", 30)


def test_an_already_expired_action_reconciles_instead_of_a_non_positive_delay() -> None:
    """Seed 004 matrix: "A current-action branch reached with an already expired stored action
    reconciles instead of scheduling a non-positive delay"."""
    assert first_step(attempt("Started", action_expires_in_s=0), TIMINGS, NOW).kind == "reconcile"


def test_a_young_started_attempt_waits_until_budgets_and_processing_have_passed() -> None:
    step = first_step(attempt("Started", sent_s_ago=20), TIMINGS, NOW)
    assert (step.kind, step.delay_s) == ("finish", 10)
    assert first_step(attempt("Started", sent_s_ago=30), TIMINGS, NOW).kind == "reconcile"
    assert first_step(attempt("Unknown", sent_s_ago=1), TIMINGS, NOW).kind == "reconcile"


def test_not_found_resends_only_inside_the_deadline_with_every_condition() -> None:
    assert after_not_found(attempt(), OK, TIMINGS, NOW).reason == "resend"
    past = after_not_found(attempt(deadline_in_s=0), OK, TIMINGS, NOW)
    assert (past.kind, past.reason, past.delay_s) == ("escalate-and-finish", "deadline", 900)
    unsafe = after_not_found(attempt(), ResendConditions(True, True, False, True), TIMINGS, NOW)
    assert unsafe.reason == "resend-not-safe:token-expired"
    assert after_not_found(attempt(), ResendConditions(False, True, True, True), TIMINGS, NOW).reason == \
        "resend-not-safe:order-not-payable"


def test_a_stored_request_that_drifted_from_its_effect_record_is_never_resent() -> None:
    """Seed 001: "A second worker may resume the intent. It may not improvise a second payment"."""
    drifted = after_not_found(attempt(), ResendConditions(True, True, True, False), TIMINGS, NOW)
    assert (drifted.kind, drifted.reason) == ("escalate-and-finish", "resend-not-safe:request-drifted")


def test_the_backoff_steps_then_stays_on_the_last() -> None:
    assert [backoff_s(TIMINGS, n) for n in range(6)] == [60, 120, 300, 900, 900, 900]


def test_the_final_local_check() -> None:
    assert final_check(NOW + timedelta(seconds=1), NOW + timedelta(seconds=1), NOW) is None
    assert final_check(NOW, NOW + timedelta(seconds=1), NOW) == "lease-lost"
    assert final_check(NOW + timedelta(seconds=1), NOW, NOW) == "deadline"


def test_a_payment_method_the_provider_could_not_check_waits_for_the_backoff_without_escalating() -> None:
    """Seed 004: "the payment method is still usable" is a resend condition; a check that
    failed (None) is an unanswered question, not an expired token, unless another condition fails."""
    unchecked = ResendConditions(True, True, None, True)
    assert after_not_found(attempt(), unchecked, TIMINGS, NOW) == Step("finish", 60, "payment-method-unchecked")
    assert after_not_found(attempt(), ResendConditions(False, True, None, True), TIMINGS, NOW).reason == \
        "resend-not-safe:order-not-payable"
    assert after_not_found(attempt(), ResendConditions(True, True, False, True), TIMINGS, NOW).reason == \
        "resend-not-safe:token-expired"


def _waiting_without_expiry(deadline_in_s: float = 3600) -> AttemptView:
    """A Started attempt showing a customer action the provider gave no expiry (Stripe's requires_action)."""
    return dataclasses.replace(attempt("Started", deadline_in_s=deadline_in_s),
                               next_action={"type": "use_stripe_sdk"}, next_action_expires_at=None)


def test_an_action_without_expiry_is_looked_up_on_each_due_pass() -> None:
    """Seed 004 matrix: "An attempt waiting for customer action is rescheduled to the action's
    expiry or the next status check": without an expiry, the due pass is that status check
    (Stripe), and past the deadline it escalates as any waiting attempt."""
    assert first_step(_waiting_without_expiry(), TIMINGS, NOW).kind == "reconcile"
    late = first_step(_waiting_without_expiry(deadline_in_s=0), TIMINGS, NOW)
    assert (late.kind, late.reason) == ("escalate-and-finish", "deadline")


def test_a_lookup_that_misses_an_attempt_waiting_for_the_customer_never_resends_it() -> None:
    """Seed 004 matrix: "recovery never resends an attempt waiting for the customer"."""
    step = after_not_found(_waiting_without_expiry(), OK, TIMINGS, NOW)
    assert (step.kind, step.reason, step.delay_s) == ("finish", "waiting-for-customer", 60)
