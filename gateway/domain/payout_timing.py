"""Every payout deadline, as arithmetic on times the caller observed (API.md, "Payout timing";
seed 000, "Issue Short-Lived Payout Execution Authority" and "Reconcile Before Any New Attempt").

- grant window: ``not_before = release_at - lead``, ``expires_at = not_before + window``;
- the reservation counts against the release date in the tenant's settlement time zone;
- send deadline: ``claimed_at + send_deadline``; every send happens before it and carries it as
  ``expires_at``, which CardCo enforces with its stated skew;
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


@dataclass(frozen=True)
class PayoutTimings:
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


def not_applied_allowed(lookup_started_at: datetime, cutoff: datetime) -> bool:
    """Seed 000's three conditions for NotApplied on "not found", given that CardCo guarantees a
    payout invisible after its visibility delay was never accepted (condition 1): the request
    expiry plus skew has passed (2), and *this* lookup began after that plus the visibility delay
    (3). The caller passes when its lookup started, never the time of an earlier lookup."""
    return lookup_started_at >= cutoff
