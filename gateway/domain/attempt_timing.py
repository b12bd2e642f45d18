"""Every deadline of a claimed attempt (a payout, a recall, a refund), as arithmetic on times the
caller observed (API.md, "Payout timing"; seed 000, "Issue Short-Lived Payout Execution Authority"
and "Reconcile Before Any New Attempt").

- grant window: ``not_before = release_at - lead``, ``expires_at = not_before + window``;
- the reservation counts against the release date in the tenant's settlement time zone;
- send deadline: ``claimed_at + send_deadline``; every send happens before it and carries it as
  ``expires_at``, which CardCo enforces with its stated skew; a same-key resend after a 429 waits
  its ``Retry-After``, or 1 s doubling per 429 when there is none, and never past the deadline;
- lease: the send deadline plus one call budget and one record budget, so a live worker that
  sends at the last moment still records before the sweeper may fence it;
- NotApplied cutoff: the send deadline plus the provider's skew plus its visibility delay; a
  "not found" observed earlier is never decisive;
- escalation: the seed's 60 minutes, shortened to the account's key window minus its safety
  margin when that is shorter (rehearsal), but never before the NotApplied cutoff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

SEED_ESCALATION_S = 3_600.0
# The first wait before a same-key resend after a 429 that names no Retry-After; doubles per 429.
RESEND_BACKOFF_S = 1.0


@dataclass(frozen=True)
class AttemptTimings:
    grant_lead_s: float
    grant_window_s: float
    send_deadline_s: float
    provider_skew_s: float
    call_budget_s: float
    record_budget_s: float
    visibility_delay_s: float
    key_window_s: float
    escalation_safety_margin_s: float
    lookup_backoff_s: Sequence[float]

    def grant_window(self, release_at: datetime) -> tuple[datetime, datetime]:
        not_before = release_at - timedelta(seconds=self.grant_lead_s)
        return not_before, not_before + timedelta(seconds=self.grant_window_s)

    def send_deadline(self, claimed_at: datetime) -> datetime:
        return claimed_at + timedelta(seconds=self.send_deadline_s)

    def lease_expiry(self, claimed_at: datetime) -> datetime:
        return self.send_deadline(claimed_at) + timedelta(seconds=self.call_budget_s + self.record_budget_s)

    def not_applied_cutoff(self, send_deadline: datetime) -> datetime:
        return send_deadline + timedelta(seconds=self.provider_skew_s + self.visibility_delay_s)

    def escalation_deadline(self, claimed_at: datetime) -> datetime:
        after = min(SEED_ESCALATION_S, self.key_window_s - self.escalation_safety_margin_s)
        return max(claimed_at + timedelta(seconds=after), self.not_applied_cutoff(self.send_deadline(claimed_at)))

    def next_check(self, now: datetime, checks_done: int) -> datetime:
        """The lookup backoff (seed: 1, 2, 5 and 15 minutes), repeating its last step."""
        steps = self.lookup_backoff_s
        return now + timedelta(seconds=steps[min(checks_done, len(steps) - 1)])


def settlement_date(release_at: datetime, time_zone: str) -> date:
    """The day a payout released at ``release_at`` counts against, in the tenant's time zone."""
    return release_at.astimezone(ZoneInfo(time_zone)).date()


def resend_wait_s(retry_after_s: float | None, limited_sends: int) -> float:
    """How long to wait before a same-key resend after the attempt's ``limited_sends``-th
    consecutive answer asking for one (a 429): the provider's ``Retry-After`` when it gave one, else
    ``RESEND_BACKOFF_S`` doubling per such answer (Stripe does not document the
    header, and a resend at once meets the same limiter)."""
    if retry_after_s is not None:
        return retry_after_s
    return RESEND_BACKOFF_S * 2.0 ** (limited_sends - 1)


def resend_fits(now: datetime, wait_s: float, send_deadline: datetime) -> bool:
    """Whether a resend after ``wait_s`` still happens before the send deadline (seed 000: a bounded
    resend "before the attempt's send deadline"); otherwise no wait and no resend."""
    return now + timedelta(seconds=wait_s) < send_deadline


def not_applied_allowed(lookup_started_at: datetime, cutoff: datetime) -> bool:
    """Seed 000's three conditions for NotApplied on "not found", given that CardCo guarantees a
    payout invisible after its visibility delay was never accepted (condition 1): the request
    expiry plus skew has passed (2), and *this* lookup began after that plus the visibility delay
    (3). The caller passes when its lookup started, never the time of an earlier lookup."""
    return lookup_started_at >= cutoff
