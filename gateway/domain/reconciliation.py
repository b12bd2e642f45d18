"""What a provider-side reconciliation run concludes about each object the provider created in its
window, and which of paygate's Succeeded attempts it may call missing (docs/decisions/0071). Pure.

Each listed object is matched to an attempt of its kind on the run's account, by the provider id
the attempt recorded and else by the client reference it sent, and classified by the one evidence
rule (gateway.domain.evidence_rule.verdict), read as a lookup's record is:

- ``orphan``: no attempt at all (a charge from a send whose Started row was lost, a payout made
  in the dashboard, a refund made outside);
- ``disagreement``: the rule escalates (amount, currency or reference differ, another provider id
  than the recorded one, two attempts named, a final outcome contradicted, evidence about an
  attempt never sent): never written over;
- ``evidence``: the attempt is in flight and the object moves it (the rule's ``Write``): applied
  through the writer of its kind, under that rule;
- ``matched``: the attempt agrees (a repeat of what it recorded, an older step, a later event).

A Succeeded attempt whose send began in the window is ``missing`` when the provider did not list
its object, but only for sends the listing could have shown: begun before the window's end less
:data:`SEND_SLACK` (the provider stamps its creation a little after the send began) and before
the listing started less the account's visibility delay (a lagging listing proves nothing absent).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from gateway.domain.evidence_rule import Escalate, Seen, Write, verdict
from gateway.domain.outcomes import AttemptState

FindingClass = Literal["matched", "evidence", "orphan", "disagreement", "missing"]
CLASSES: tuple[FindingClass, ...] = ("matched", "evidence", "orphan", "disagreement", "missing")
# Findings a person owns, with their escalation reasons; matched and evidence are not escalated.
ESCALATED: dict[FindingClass, str] = {"orphan": "provider-orphan", "disagreement": "provider-disagreement",
                                      "missing": "provider-missing"}
SEND_SLACK = timedelta(seconds=60)


def finding(state: AttemptState | None, recorded_id: str | None, seen: Seen | None) -> FindingClass:
    """The class of one listed object matched to an attempt in ``state`` that recorded
    ``recorded_id`` (``state`` None: no attempt); ``seen``: what the object establishes about
    it (None: the object names two different attempts, by id and by reference)."""
    if state is None:
        return "orphan"
    if seen is None:
        return "disagreement"
    ruled = verdict(state, recorded_id, seen)
    if isinstance(ruled, Escalate):
        return "disagreement"
    if isinstance(ruled, Write):
        return "evidence"
    return "matched"


def missing_before(window_to: datetime, listing_started_at: datetime, visibility_delay_s: float) -> datetime:
    """Sends begun before this moment (and in the window) are the ones a Succeeded attempt may be
    ``missing`` for; see the module docstring."""
    return min(window_to - SEND_SLACK, listing_started_at - timedelta(seconds=visibility_delay_s))


def escalation_key(provider_account: str, kind: str, provider_object_id: str, finding_class: FindingClass) -> str:
    """One escalation per finding about one provider object, whichever run found it:
    ``provider-<class>:<account>:<kind>:<object id>``."""
    return f"{ESCALATED[finding_class]}:{provider_account}:{kind}:{provider_object_id}"


def scheduled_window(now: datetime, interval_s: float, overlap_s: float) -> tuple[datetime, datetime]:
    """The window a scheduled run covers at ``now``: the interval before, plus ``overlap_s`` more
    before it, so an object created at the seam of two runs is listed by both."""
    return now - timedelta(seconds=interval_s + overlap_s), now
