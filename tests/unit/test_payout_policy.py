"""Seed 000, "Representative policy matrix": one verdict per row, first match wins, plus
EvaluateForExecution (section 9: own reservation not counted twice, Approved expected)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gateway.domain.payout_policy import (
    BeneficiaryFacts,
    DestinationFacts,
    PayoutContext,
    PayoutFacts,
    RequesterFacts,
    TenantFacts,
    evaluate,
    evaluate_for_execution,
)
from gateway.domain.payout_terms import PayoutIntent

NOW = datetime(2026, 11, 29, 9, 58, tzinfo=UTC)
INTENT = PayoutIntent("PAY-3107", "T-0417", "clerk-22", "BEN-2208", "DST-77", 3, 425_000, "EUR", "INV-9031", 6)
CONTEXT = PayoutContext(
    intent=INTENT, observed_at=NOW, requester=RequesterFacts("clerk-22", 1_000_000), stage="submit",
    tenant=TenantFacts(payouts_suspended=False, daily_limit_minor=5_000_000, paid_minor=0, reserved_minor=0,
                       settings_version=1),
    beneficiary=BeneficiaryFacts("T-0417", verified=True, status="Active", version=4),
    destination=DestinationFacts("BEN-2208", 3, NOW - timedelta(days=30)),
    payout=PayoutFacts("Draft", 6, holds_reservation=False, has_unresolved_attempt=False, has_live_grant=False),
    policy_version="payout-policy/2026.10")


def _with(**changes: object) -> PayoutContext:
    context = CONTEXT
    for name, value in changes.items():
        part, _, field = name.partition("__")
        context = replace(context, **{part: replace(getattr(context, part), **{field: value})} if field
                          else {part: value})  # type: ignore[arg-type]
    return context


@pytest.mark.parametrize(("context", "outcome", "reason"), [
    (_with(tenant=None), "Deferred", "context.unavailable"),
    (_with(policy_version=None), "Deferred", "context.unavailable"),
    (_with(tenant__payouts_suspended=True), "Denied", "tenant.payouts-suspended"),
    (_with(beneficiary__verified=False), "Denied", "beneficiary.not-eligible"),
    (_with(beneficiary__status="Suspended"), "Denied", "beneficiary.not-eligible"),
    (_with(beneficiary__tenant_id="T-other"), "Denied", "beneficiary.not-eligible"),
    (_with(destination__beneficiary_id="BEN-1"), "Denied", "destination.not-registered"),
    (_with(destination__version=4), "Denied", "destination.not-registered"),
    (_with(payout__state="Approved"), "Denied", "payout.not-submittable"),
    (_with(payout__version=7), "Denied", "payout.not-submittable"),
    (_with(tenant__paid_minor=4_000_000, tenant__reserved_minor=600_000), "Denied", "tenant.daily-limit"),
    (_with(destination__changed_at=NOW - timedelta(days=6)), "AcknowledgmentRequired",
     "destination.recently-changed"),
    (_with(requester=RequesterFacts("clerk-22", 100)), "EscalationRecommended", "amount.above-requester-limit"),
    (CONTEXT, "Allowed", "payout.allowed"),
])
def test_the_matrix(context: PayoutContext, outcome: str, reason: str) -> None:
    verdict = evaluate(context)
    assert (verdict.outcome.value, verdict.reason.value) == (outcome, reason)


def test_an_acknowledgment_clears_only_the_recent_change() -> None:
    context = replace(_with(destination__changed_at=NOW - timedelta(days=1)),
                      acknowledged=frozenset({"destination.recently-changed"}))
    assert evaluate(context).reason.value == "payout.allowed"


def test_reauthorization_needs_approved_without_live_grant_or_unresolved_attempt() -> None:
    approved = _with(stage="reauthorize", payout__state="Approved")
    assert evaluate(approved).allowed
    assert evaluate(_with(stage="reauthorize")).reason.value == "payout.not-submittable"
    assert evaluate(replace(approved, payout=replace(approved.payout, has_live_grant=True))  # type: ignore[arg-type]
                    ).reason.value == "payout.not-submittable"


def test_execution_does_not_count_the_payouts_own_reservation_twice() -> None:
    context = _with(stage="execute", payout__state="Approved", payout__holds_reservation=True,
                    tenant__reserved_minor=5_000_000)
    assert evaluate_for_execution(context).allowed
    assert evaluate_for_execution(replace(context, tenant=replace(context.tenant, paid_minor=1))  # type: ignore[arg-type]
                                  ).reason.value == "tenant.daily-limit"
    with pytest.raises(ValueError):
        evaluate_for_execution(CONTEXT)
