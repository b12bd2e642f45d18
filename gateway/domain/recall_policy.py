"""The recall decision's rules (docs/decisions/0015; seed 000 section 17: a recall has its own
decision). Pure: no I/O; the caller reads the facts under the payout's and the recall row's locks.

- a Succeeded recall already exists -> Denied ``recall.already-recalled``;
- the paid attempt came back (``returned``) -> Denied ``recall.payout-not-paid`` (a return got
  there first);
- no recall policy release, no paid attempt or no provider payout id to name -> Deferred
  ``context.unavailable``;
- otherwise Allowed ``recall.allowed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Reason = Literal["recall.allowed", "recall.payout-not-paid", "recall.already-recalled", "context.unavailable"]
Outcome = Literal["Allowed", "Denied", "Deferred"]


def recall_reason(*, already_recalled: bool, paid_attempt: Mapping[str, Any] | None,
                  policy_version: str | None) -> Reason:
    if already_recalled:
        return "recall.already-recalled"
    if paid_attempt is not None and paid_attempt["provider_status"] == "returned":
        return "recall.payout-not-paid"
    if policy_version is None or paid_attempt is None or paid_attempt["provider_payout_id"] is None:
        return "context.unavailable"
    return "recall.allowed"


def recall_outcome(reason: Reason) -> Outcome:
    return "Allowed" if reason == "recall.allowed" else "Deferred" if reason == "context.unavailable" else "Denied"
