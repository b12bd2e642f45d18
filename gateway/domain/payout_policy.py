"""The payout policy: a pure function of an observed context (seed 000, "Authoritative Context and
the Governance Decision", representative policy matrix).

No writes, calls, clock reads or identifiers: the observation time arrives in the context, and the
evaluator around these rules (``gateway.payouts.decisions``) wraps the verdict in a decision
record. The same rules run three times in a payout's life, each with its own state precondition:

- ``submit``: the payout must be Draft at the version the intent bound;
- ``reauthorize`` (a materially new attempt, seed "What Makes a Payout Attempt Materially New"):
  Approved at the bound version, with no live grant and no attempt Claimed, Started or Unknown;
- ``execute`` (``EvaluateForExecution``, seed "The Worker Validation Pipeline"): Approved, this
  payout's own reservation not counted twice, requester facts as the decision captured them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal

from gateway.domain.payout_terms import PayoutIntent

RECENTLY_CHANGED = timedelta(days=7)
Stage = Literal["submit", "reauthorize", "execute"]


class Outcome(StrEnum):
    ALLOWED = "Allowed"
    DENIED = "Denied"
    DEFERRED = "Deferred"
    ACKNOWLEDGMENT_REQUIRED = "AcknowledgmentRequired"
    ESCALATION_RECOMMENDED = "EscalationRecommended"


class Reason(StrEnum):
    """The matrix's reason codes (API.md, Payouts: part of the contract)."""

    PAYOUTS_SUSPENDED = "tenant.payouts-suspended"
    BENEFICIARY_NOT_ELIGIBLE = "beneficiary.not-eligible"
    DESTINATION_NOT_REGISTERED = "destination.not-registered"
    PAYOUT_NOT_SUBMITTABLE = "payout.not-submittable"
    DAILY_LIMIT = "tenant.daily-limit"
    CONTEXT_UNAVAILABLE = "context.unavailable"
    DESTINATION_RECENTLY_CHANGED = "destination.recently-changed"
    ABOVE_REQUESTER_LIMIT = "amount.above-requester-limit"
    ALLOWED = "payout.allowed"


@dataclass(frozen=True)
class TenantFacts:
    payouts_suspended: bool
    daily_limit_minor: int
    paid_minor: int  # for the payout's settlement date
    reserved_minor: int  # held by issued grants and unresolved attempts, this payout's included
    settings_version: int


@dataclass(frozen=True)
class BeneficiaryFacts:
    tenant_id: str
    verified: bool
    status: str
    version: int


@dataclass(frozen=True)
class DestinationFacts:
    beneficiary_id: str
    version: int
    changed_at: datetime


@dataclass(frozen=True)
class PayoutFacts:
    state: str
    version: int
    holds_reservation: bool
    has_unresolved_attempt: bool
    has_live_grant: bool


@dataclass(frozen=True)
class RequesterFacts:
    """Who asked and the approval limit that covers them (the approver's, after approval)."""

    actor_id: str
    approval_limit_minor: int


@dataclass(frozen=True)
class ContextVersions:
    """The versions a claim fences on: every mutable input the recheck re-reads."""

    tenant_settings: int
    beneficiary: int
    destination: int
    policy: str


@dataclass(frozen=True)
class PayoutContext:
    intent: PayoutIntent
    observed_at: datetime
    requester: RequesterFacts
    stage: Stage
    tenant: TenantFacts | None
    beneficiary: BeneficiaryFacts | None
    destination: DestinationFacts | None
    payout: PayoutFacts | None
    policy_version: str | None
    acknowledged: frozenset[str] = field(default_factory=frozenset)

    @property
    def unavailable(self) -> bool:
        return None in (self.tenant, self.beneficiary, self.destination, self.payout, self.policy_version)

    def versions(self) -> ContextVersions:
        if self.tenant is None or self.beneficiary is None or self.destination is None or self.policy_version is None:
            raise ValueError("an unavailable context has no versions to fence on")
        return ContextVersions(self.tenant.settings_version, self.beneficiary.version, self.destination.version,
                               self.policy_version)


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reason: Reason
    policy_version: str | None

    @property
    def allowed(self) -> bool:
        return self.outcome is Outcome.ALLOWED


def _state_allows(stage: Stage, payout: PayoutFacts, intent: PayoutIntent) -> bool:
    if payout.version != intent.payout_version:
        return False
    if stage == "submit":
        return payout.state == "Draft"
    if stage == "reauthorize":
        return payout.state == "Approved" and not payout.has_unresolved_attempt and not payout.has_live_grant
    return payout.state == "Approved"


def evaluate(context: PayoutContext) -> Verdict:
    """The matrix, first match wins, in the seed's order."""

    def verdict(outcome: Outcome, reason: Reason) -> Verdict:
        return Verdict(outcome, reason, context.policy_version)

    tenant, beneficiary, destination, payout = context.tenant, context.beneficiary, context.destination, context.payout
    if tenant is None or beneficiary is None or destination is None or payout is None or context.unavailable:
        return verdict(Outcome.DEFERRED, Reason.CONTEXT_UNAVAILABLE)
    intent = context.intent
    if tenant.payouts_suspended:
        return verdict(Outcome.DENIED, Reason.PAYOUTS_SUSPENDED)
    if not (beneficiary.verified and beneficiary.status == "Active" and beneficiary.tenant_id == intent.tenant_id):
        return verdict(Outcome.DENIED, Reason.BENEFICIARY_NOT_ELIGIBLE)
    if destination.beneficiary_id != intent.beneficiary_id or destination.version != intent.destination_version:
        return verdict(Outcome.DENIED, Reason.DESTINATION_NOT_REGISTERED)
    if not _state_allows(context.stage, payout, intent):
        return verdict(Outcome.DENIED, Reason.PAYOUT_NOT_SUBMITTABLE)
    # This payout's own reservation is already in reserved_minor; never count it twice.
    own = intent.amount_minor if payout.holds_reservation else 0
    if tenant.paid_minor + tenant.reserved_minor - own + intent.amount_minor > tenant.daily_limit_minor:
        return verdict(Outcome.DENIED, Reason.DAILY_LIMIT)
    if (context.observed_at - destination.changed_at < RECENTLY_CHANGED
            and Reason.DESTINATION_RECENTLY_CHANGED not in context.acknowledged):
        return verdict(Outcome.ACKNOWLEDGMENT_REQUIRED, Reason.DESTINATION_RECENTLY_CHANGED)
    if intent.amount_minor > context.requester.approval_limit_minor:
        return verdict(Outcome.ESCALATION_RECOMMENDED, Reason.ABOVE_REQUESTER_LIMIT)
    return verdict(Outcome.ALLOWED, Reason.ALLOWED)


def evaluate_for_execution(context: PayoutContext) -> Verdict:
    """EvaluateForExecution: would this exact payout still be allowed now?"""
    if context.stage != "execute":
        raise ValueError("evaluate_for_execution needs a context built for the execute stage")
    return evaluate(context)
