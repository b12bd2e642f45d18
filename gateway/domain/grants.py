"""The grant checks a worker makes before it may claim (seed 000, "The Worker Validation
Pipeline"), in the seed's order, the same for every grant-authorized attempt kind (payout,
recall): ``binding.mismatch`` (a grant for another subject) -> ``presenter.not-audience`` ->
``grant.revoked`` -> ``grant.consumed`` -> ``grant.expired`` -> postponed while not yet valid.
An unknown grant (``grant.unknown``) is the caller's to report: it has no row. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class NotYetValid:
    """Early: the delivery is postponed until ``until``, never refused."""

    until: datetime


def check_grant(grant: dict[str, Any], *, subject_id: str, subject_field: str, operation: str,
                audiences: Collection[str], now: datetime) -> str | NotYetValid | None:
    """The refusal code, a postponement, or None when the grant may be presented now."""
    if grant[subject_field] != subject_id:
        return "binding.mismatch"
    if grant["operation"] != operation or grant["audience"] not in audiences:
        return "presenter.not-audience"
    if grant["state"] == "Revoked":
        return "grant.revoked"
    if grant["state"] == "Consumed":
        return "grant.consumed"
    if grant["state"] == "Expired" or now >= grant["expires_at"]:
        return "grant.expired"
    if now < grant["not_before"]:
        return NotYetValid(grant["not_before"])
    return None
