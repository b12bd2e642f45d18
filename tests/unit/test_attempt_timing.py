"""API.md "Payout timing" (not_before = release_at - lead, expires_at = not_before + window,
send deadline after the claim) and seed 000's NotApplied cutoff and escalation deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.domain.attempt_timing import AttemptTimings, not_applied_allowed, resend_fits, resend_wait_s

T = AttemptTimings(grant_lead_s=300, grant_window_s=1800, send_deadline_s=300, provider_skew_s=30, call_budget_s=15,
                  record_budget_s=5, visibility_delay_s=10, key_window_s=86_400, escalation_safety_margin_s=3600,
                  lookup_backoff_s=[60, 120, 300, 900])
RELEASE = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)


def test_the_grant_window_covers_the_batch() -> None:
    assert T.grant_window(RELEASE) == (RELEASE - timedelta(minutes=5), RELEASE + timedelta(minutes=25))


def test_the_lease_outlasts_the_last_send_and_its_record() -> None:
    claimed = RELEASE + timedelta(seconds=4)
    assert T.send_deadline(claimed) == claimed + timedelta(minutes=5)
    assert T.lease_expiry(claimed) == claimed + timedelta(seconds=320)


def test_not_applied_needs_a_lookup_after_expiry_skew_and_visibility() -> None:
    cutoff = T.not_applied_cutoff(RELEASE)
    assert cutoff == RELEASE + timedelta(seconds=40)
    assert not not_applied_allowed(cutoff - timedelta(microseconds=1), cutoff)
    assert not_applied_allowed(cutoff, cutoff)


def test_escalation_is_the_seeds_hour_or_the_shorter_rehearsal_key_window() -> None:
    assert T.escalation_deadline(RELEASE) == RELEASE + timedelta(hours=1)
    rehearsal = AttemptTimings(5, 60, 20, 30, 3, 2, 2, 120, 30, [1, 2, 4, 8])
    assert rehearsal.escalation_deadline(RELEASE) == RELEASE + timedelta(seconds=90)


def test_lookups_back_off_and_repeat_the_last_step() -> None:
    assert [T.next_check(RELEASE, n) - RELEASE for n in (0, 3, 9)] == \
        [timedelta(seconds=60), timedelta(seconds=900), timedelta(seconds=900)]


def test_a_resend_waits_the_retry_after_given_else_1_s_doubling_per_429() -> None:
    """The provider's Retry-After when it gave one (0 included); without one 1 s,
    then 2 s, then 4 s for the attempt's first, second and third 429."""
    assert [resend_wait_s(7.0, n) for n in (1, 2)] == [7.0, 7.0]
    assert resend_wait_s(0.0, 2) == 0.0
    assert [resend_wait_s(None, n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]


def test_no_resend_waits_into_the_send_deadline() -> None:
    """Seed 000: a bounded resend happens before the attempt's send deadline."""
    deadline = RELEASE + timedelta(seconds=300)
    assert resend_fits(RELEASE + timedelta(seconds=298), 1.0, deadline)
    assert not resend_fits(RELEASE + timedelta(seconds=299), 1.0, deadline)
    assert not resend_fits(RELEASE, 400.0, deadline)
