"""What the recovery loop does with one claimed attempt (seed 004, "The Recovery Loop").

The loop's branches are decided here, from the attempt as read and the one clock's ``now``,
without I/O: :func:`first_step` before any lookup, :func:`after_not_found` once a lookup found
nothing. The caller performs the step (close, finish, escalate and finish, look up, resend).
Every branch either resolves the attempt or schedules it with a positive delay; none sends a
first attempt, none sends past the stamped escalation deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gateway.domain.attempts import action_is_current

StepKind = Literal["close-never-sent", "finish", "escalate-and-finish", "reconcile"]


@dataclass(frozen=True)
class Timings:
    """The provider account's timings that recovery applies to an attempt."""

    abandonment_threshold_s: float
    call_budget_s: float
    record_budget_s: float
    processing_allowance_s: float
    lookup_backoff_s: tuple[float, ...]
    readonly_cadence_s: float


@dataclass(frozen=True)
class AttemptView:
    state: str
    created_at: datetime
    first_sent_at: datetime | None
    escalation_deadline: datetime | None
    next_action: object
    next_action_expires_at: datetime | None
    passes: int  # recovery look-ups so far: the position in the backoff schedule


@dataclass(frozen=True)
class Step:
    kind: StepKind
    delay_s: float = 0.0
    reason: str | None = None


MIN_DELAY_S = 0.001  # never schedule a zero or negative delay


def backoff_s(timings: Timings, passes: int) -> float:
    """The next backoff step: 1, 2, 5, 15 minutes... then the last step again."""
    schedule = timings.lookup_backoff_s
    return schedule[min(passes, len(schedule) - 1)]


def _until(moment: datetime, now: datetime) -> float:
    return max((moment - now).total_seconds(), MIN_DELAY_S)


def first_step(attempt: AttemptView, timings: Timings, now: datetime) -> Step:
    """Branches before any lookup: NotStarted, a current customer action, a young Started."""
    if attempt.state == "NotStarted":
        abandon_at = attempt.created_at + timedelta(seconds=timings.abandonment_threshold_s)
        if now >= abandon_at:
            return Step("close-never-sent", reason="never-sent")
        # The endpoint is about to send it; recovery never sends a first attempt.
        return Step("finish", _until(abandon_at, now))
    if action_is_current(attempt.state, attempt.next_action, attempt.next_action_expires_at, now):
        poll = backoff_s(timings, attempt.passes)
        expiry = attempt.next_action_expires_at
        delay = min(_until(expiry, now), poll) if expiry else poll
        if attempt.escalation_deadline and now >= attempt.escalation_deadline:
            # The key window is closing whether or not the customer acts.
            return Step("escalate-and-finish", delay, "deadline")
        if expiry is None:
            # An action the provider gives no expiry (Stripe's requires_action): each due pass is
            # the "next status check", a lookup that never resends (after_not_found).
            return Step("reconcile")
        return Step("finish", delay)
    if attempt.state == "Started" and attempt.first_sent_at is not None:
        settled_at = attempt.first_sent_at + timedelta(
            seconds=timings.call_budget_s + timings.record_budget_s + timings.processing_allowance_s)
        if now < settled_at:
            return Step("finish", _until(settled_at, now))
    # Unknown, a stalled Started, or one whose customer action expired (never shown again).
    return Step("reconcile")


@dataclass(frozen=True)
class ResendConditions:
    """The article's resend conditions as the loop can check them before committing an intent."""

    order_payable: bool
    request_buildable: bool  # same endpoint, account and API version as stored; account configured
    payment_method_usable: bool | None  # None: the provider could not say; ask again on the backoff
    request_unchanged: bool  # the stored request still hashes to its committed effect record (seed 001)


def after_not_found(attempt: AttemptView, conditions: ResendConditions, timings: Timings, now: datetime) -> Step:
    """A lookup found nothing: escalate past the deadline or when a resend condition fails,
    otherwise resend (the caller commits the intent first and re-checks everything there)."""
    if attempt.escalation_deadline is None or now >= attempt.escalation_deadline:
        return Step("escalate-and-finish", timings.readonly_cadence_s, "deadline")
    if action_is_current(attempt.state, attempt.next_action, attempt.next_action_expires_at, now):
        # Recovery never resends an attempt waiting for the customer; a lookup that missed it
        # (a search that lags) proves nothing either.
        return Step("finish", backoff_s(timings, attempt.passes), "waiting-for-customer")
    for failed, name in ((not conditions.order_payable, "order-not-payable"),
                         (not conditions.request_buildable, "request-not-buildable"),
                         (conditions.payment_method_usable is False, "token-expired"),
                         (not conditions.request_unchanged, "request-drifted")):
        if failed:
            return Step("escalate-and-finish", timings.readonly_cadence_s, f"resend-not-safe:{name}")
    if conditions.payment_method_usable is None:
        # Not a failed condition, only an unanswered question: no resend now, no escalation.
        return Step("finish", backoff_s(timings, attempt.passes), "payment-method-unchecked")
    return Step("reconcile", reason="resend")


def final_check(lease_expires_at: datetime, escalation_deadline: datetime, now: datetime) -> str | None:
    """The last local check just before dispatch; the reason to abandon the send, or None."""
    if now >= lease_expires_at:
        return "lease-lost"
    if now >= escalation_deadline:
        return "deadline"
    return None
