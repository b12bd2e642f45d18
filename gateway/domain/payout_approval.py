"""Who may approve a payout (API.md, "Authentication": ``approve`` by a clerk of the payout's
tenant whose approval limit covers the amount and who is not the requester; seed 000, policy
matrix "Amount above the requester's approval limit -> EscalationRecommended": a second person
with the authority the requester lacks). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


def approval_refusal(*, approver_id: str, approver_limit_minor: int | None, requester_id: str,
                     amount_minor: int) -> str | None:
    """Why this clerk may not approve this payout, or None when they may."""
    if approver_id == requester_id:
        return "the requester cannot approve their own payout"
    if (approver_limit_minor or 0) < amount_minor:
        return "the approver's limit does not cover the amount"
    return None


@dataclass(frozen=True)
class Clerk:
    """A clerk of the payout's tenant as their token states them (API.md, Authentication)."""

    subject: str
    approval_limit_minor: int | None


@dataclass(frozen=True)
class Pending:
    """What a payout awaiting a person needs next, and who may give it."""

    action: Literal["acknowledge", "approve"]
    rule: str
    clerks: tuple[str, ...]


def who_may_act(*, outcome: str, requester_id: str, amount_minor: int, clerks: Sequence[Clerk]) -> Pending | None:
    """The act a Draft payout's latest decision waits for and the tenant's clerks who may give it,
    by the very rules the acknowledge and approve endpoints apply (seed 000, policy matrix:
    "Destination changed in the last 7 days -> AcknowledgmentRequired", "Amount above the
    requester's approval limit -> EscalationRecommended"); None for any other outcome."""
    if outcome == "AcknowledgmentRequired":
        return Pending("acknowledge", "any clerk of the payout's tenant",
                       tuple(sorted({clerk.subject for clerk in clerks})))
    if outcome == "EscalationRecommended":
        return Pending("approve", "a clerk of the payout's tenant, not the requester, whose approval limit covers "
                                  "the amount", tuple(sorted({
                                      clerk.subject for clerk in clerks if approval_refusal(
                                          approver_id=clerk.subject, approver_limit_minor=clerk.approval_limit_minor,
                                          requester_id=requester_id, amount_minor=amount_minor) is None})))
    return None
