"""Which provider account a NEW payout attempt goes to, and the payout timings drawn from settings
(API.md, "Payout timing"; docs/decisions/0007).

The account of a new attempt is a configuration decision, taken once by the claim and stored on
the attempt: the first configured provider account. Every later send, resend and lookup of that
attempt uses the stored account (gateway.pipeline.accounts), never this choice again.
"""

from __future__ import annotations

from gateway.domain.attempt_kinds import PAYOUT
from gateway.domain.attempt_timing import AttemptTimings
from gateway.providers import provider_for
from gateway.settings import ProviderAccount, Settings

OPERATION = "payout.submit"
AUDIENCE = "payout-executor"
JOB_KIND = PAYOUT.job
# An unused grant's escalation: 'payout-grant:<grant_id>:expired-unused' (gateway/payouts/grant_sweep.py).
EXPIRED_GRANT_PREFIX = "payout-grant:"


def payout_account(settings: Settings) -> ProviderAccount:
    """The account new payout attempts are claimed on: the first configured one (a recall goes to
    the account its payout was paid on, gateway.payouts.recalls)."""
    if not settings.provider_accounts:
        raise RuntimeError("payouts need a configured provider account")
    return settings.provider_accounts[0]


def attempt_timings(settings: Settings, account: ProviderAccount | None = None) -> AttemptTimings:
    """The timings of an attempt on ``account`` (its stored one); None: the account new attempts use."""
    account = account or payout_account(settings)
    return AttemptTimings(
        grant_lead_s=settings.payout_grant_lead_s, grant_window_s=settings.payout_grant_window_s,
        send_deadline_s=settings.payout_send_deadline_s, provider_skew_s=settings.provider_skew_s,
        call_budget_s=account.call_budget_s, record_budget_s=account.record_budget_s,
        visibility_delay_s=_visibility_delay_s(account),
        key_window_s=account.key_window_s,
        escalation_safety_margin_s=account.escalation_safety_margin_s, lookup_backoff_s=account.lookup_backoff_s)


def _visibility_delay_s(account: ProviderAccount) -> float:
    """The visibility delay seed 000's NotApplied cutoff waits out after the send deadline and the
    skew, for payouts, recalls and refunds alike (``not_applied_cutoff``): how long the provider may
    hide a new object from a lookup by client reference, the account's ``visibility_delay_s`` or
    else its provider's documented delay, never less than the account's
    processing allowance, which stood for it before the account could state it
    (docs/decisions/0056). A provider that enforces no request expiry never has an attempt closed
    for "not found" (docs/decisions/0047), so its delay would only postpone the escalation deadline."""
    provider = provider_for(account.id).timings
    if not provider.request_expiry_enforced:
        return account.processing_allowance_s
    lag = provider.visibility_delay_s if account.visibility_delay_s is None else account.visibility_delay_s
    return max(account.processing_allowance_s, lag)
