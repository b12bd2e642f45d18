"""Who may approve a payout (API.md, "Authentication": ``approve`` by a clerk of the payout's
tenant whose approval limit covers the amount and who is not the requester; seed 000, policy
matrix "Amount above the requester's approval limit -> EscalationRecommended": a second person
with the authority the requester lacks). Pure: no I/O."""

from __future__ import annotations


def approval_refusal(*, approver_id: str, approver_limit_minor: int | None, requester_id: str,
                     amount_minor: int) -> str | None:
    """Why this clerk may not approve this payout, or None when they may."""
    if approver_id == requester_id:
        return "the requester cannot approve their own payout"
    if (approver_limit_minor or 0) < amount_minor:
        return "the approver's limit does not cover the amount"
    return None
