"""Payment attempts: their evidence, and how checkout writes what the one evidence rule decides (seed 004).

Three writers resolve attempts: the checkout endpoint recording its own response, the
notification handler, and the recovery loop's lookups. They all turn what they learned into
:class:`Evidence` and let :func:`decide` say what it means for the attempt as it stands. The rule
itself is every kind's (gateway.domain.evidence_rule): Unknown never overwrites a known outcome, a
provider payment ID is set only when empty and a different one is a contradiction,
amount/currency/account must match, a later lifecycle event (refund) is recorded without
contradicting Succeeded, and an incompatible outcome escalates instead of overwriting ("The
Notification Handler", "The Attempt Row"). What is checkout's own is here: the customer's next
action, the outbox effects, a rejection that answered the only send, CardCo's key-in-use answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from gateway.domain.evidence_rule import Escalate, Later, Seen, verdict
from gateway.domain.outcomes import SETTLED, AttemptState

S = AttemptState

# What a piece of evidence says happened, in the provider's terms, normalized.
Finding = Literal["succeeded", "failed", "rejected", "processing", "requires_action", "refunded", "unknown",
                  "key_in_use"]

ORDER_CONFIRMATION = "order-confirmation"
KEY_IN_USE = "idempotency-key-in-use"
REFUND_NOTICE = "refund-notice"


@dataclass(frozen=True)
class Evidence:
    """What one response, notification or lookup established about one attempt.

    ``rejected`` is a documented no-effect rejection of a send (400 invalid_request, 429): it
    closes the attempt as NotApplied only when it answered the attempt's only send.
    ``key_in_use`` is CardCo's 409 ``idempotency_key_in_use``: the attempt's key already carries
    a request with other parameters; the attempt stays not yet known and a person is told.
    ``evidence_key`` names the evidence in escalation keys (a notification's key), when stable.
    """

    finding: Finding
    provider_account: str
    reason: str | None = None
    provider_id: str | None = None
    provider_status: str | None = None
    next_action: dict[str, Any] | None = None
    next_action_expires_at: datetime | None = None
    amount_minor: int | None = None
    currency: str | None = None
    evidence_key: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def unknown(cls, account: str, reason: str, **details: Any) -> Evidence:
        """Evidence that establishes nothing yet (no readable answer, an undocumented one, a
        request that could not be built): Unknown, with its reason."""
        return cls(finding="unknown", provider_account=account, reason=reason, details=details)


@dataclass(frozen=True)
class AttemptFacts:
    """The parts of an attempt row a decision depends on."""

    attempt_id: str
    state: AttemptState
    provider_account: str
    amount_minor: int
    currency: str
    provider_id: str | None
    has_action: bool = False  # a customer action is stored (the page may be showing it)


@dataclass(frozen=True)
class Escalation:
    key: str
    reason: str


@dataclass(frozen=True)
class Decision:
    """What to write. ``new_state`` None keeps the state; ``effects`` are outbox effect names;
    an ``escalation`` without a new state is all there is to write, with one it is raised in the
    same transaction as the state.

    ``look_up_now``: the attempt is due for a lookup at once instead of on the backoff (a
    customer action this write clears may still be what the provider waits for)."""

    new_state: AttemptState | None = None
    outcome_reason: str | None = None
    record_provider_id: bool = False
    provider_status: str | None = None
    store_action: bool = False
    clear_action: bool = False
    effects: tuple[str, ...] = ()
    escalation: Escalation | None = None
    look_up_now: bool = False

    @property
    def resolves(self) -> bool:
        return self.new_state in SETTLED

    @property
    def sets_status(self) -> bool:
        """Whether ``provider_status`` is written (None clears it). A decision that records a
        state records the provider status that goes with it, so a status the new state
        contradicts (``requires_action`` on Unknown) never survives."""
        return self.new_state is not None or self.provider_status is not None


IGNORE = Decision()


def _escalate(attempt: AttemptFacts, problem: str, evidence: Evidence) -> Decision:
    """``attempt:<id>:<problem>[:<evidence key>]``: per notification when it has a stable key,
    else one coarse key per attempt (seed 004, "Escalations")."""
    suffix = f":{evidence.evidence_key}" if evidence.evidence_key else ""
    return Decision(escalation=Escalation(f"attempt:{attempt.attempt_id}:{problem}{suffix}", problem))


def _mismatch(attempt: AttemptFacts, evidence: Evidence) -> bool:
    return (evidence.provider_account != attempt.provider_account
            or (evidence.amount_minor is not None and evidence.amount_minor != attempt.amount_minor)
            or (evidence.currency is not None and evidence.currency.upper() != attempt.currency))


# What each finding establishes, in the outcome vocabulary (a rejection: see :func:`seen`).
ESTABLISHES: dict[Finding, AttemptState] = {
    "succeeded": S.SUCCEEDED, "refunded": S.SUCCEEDED, "failed": S.FAILED, "processing": S.STARTED,
    "requires_action": S.STARTED, "unknown": S.UNKNOWN, "key_in_use": S.UNKNOWN}


def seen(attempt: AttemptFacts, evidence: Evidence, *, only_send: bool) -> Seen:
    """``evidence`` read for :func:`gateway.domain.evidence_rule.verdict`. A documented no-effect
    rejection proves the attempt never took effect only when it answered its only send (seed 004
    matrix: "A documented validation rejection of an attempt's only send records NotApplied with
    the error"); of one send among several it proves nothing yet. A refund is a later event."""
    if evidence.finding == "rejected":
        state = S.NOT_APPLIED if only_send else S.UNKNOWN
    else:
        state = ESTABLISHES[evidence.finding]
    return Seen(state, evidence.provider_id, matches=not _mismatch(attempt, evidence),
                later=evidence.finding == "refunded")


def decide(attempt: AttemptFacts, evidence: Evidence, *, only_send: bool) -> Decision:
    """What ``evidence`` means for ``attempt`` as it stands now, by the one evidence rule
    (:func:`gateway.domain.evidence_rule.verdict`), written as checkout writes it. Pure.

    ``only_send`` says the attempt has exactly one send_intent (see :func:`seen`). Another provider
    id than the recorded one is a contradiction (seed 004: "treat a different ID for the same
    attempt as a contradiction escalation"). A repeat of a settled outcome, or Unknown evidence,
    records a provider id still missing; a live attempt is rewritten in the state the evidence
    establishes, refreshing its provider status, customer action and next check.
    """
    found = seen(attempt, evidence, only_send=only_send)
    ruled = verdict(attempt.state, attempt.provider_id, found)
    new_id = bool(evidence.provider_id) and attempt.provider_id is None
    if isinstance(ruled, Escalate):
        return _escalate(attempt, "contradiction" if ruled.cause == "other-id" else ruled.cause, evidence)
    if isinstance(ruled, Later):
        return Decision(record_provider_id=new_id, provider_status="refunded", effects=(REFUND_NOTICE,))
    if attempt.state in SETTLED:
        # A repeat of what is known, or an Unknown that must never overwrite it; else an older step.
        return Decision(record_provider_id=new_id) if found.state in (attempt.state, S.UNKNOWN) else IGNORE
    return _live(attempt, evidence, found.state, new_id)


def _live(attempt: AttemptFacts, evidence: Evidence, state: AttemptState, new_id: bool) -> Decision:
    finding = evidence.finding
    if state is S.SUCCEEDED:
        effects = (ORDER_CONFIRMATION, REFUND_NOTICE) if finding == "refunded" else (ORDER_CONFIRMATION,)
        return Decision(new_state=S.SUCCEEDED, outcome_reason=evidence.reason, record_provider_id=new_id,
                        provider_status=evidence.provider_status or finding, clear_action=True, effects=effects)
    if state is S.FAILED:
        return Decision(new_state=S.FAILED, outcome_reason=evidence.reason or "failed",
                        record_provider_id=new_id, provider_status=evidence.provider_status or "failed",
                        clear_action=True)
    if state is S.NOT_APPLIED:
        return Decision(new_state=S.NOT_APPLIED, outcome_reason=evidence.reason or "rejected", clear_action=True)
    if state is S.STARTED:
        action = finding == "requires_action"
        return Decision(new_state=S.STARTED, record_provider_id=new_id,
                        provider_status=evidence.provider_status or finding,
                        store_action=action, clear_action=not action)
    if finding == "key_in_use":
        # This send did nothing, yet an earlier one under the key may have: still not known. Our
        # key reused with other parameters means something is badly wrong (docs/decisions/0009).
        return Decision(new_state=S.UNKNOWN, outcome_reason=evidence.reason, clear_action=True,
                        look_up_now=attempt.has_action,
                        escalation=Escalation(f"attempt:{attempt.attempt_id}:{KEY_IN_USE}", KEY_IN_USE))
    # unknown, or a no-effect rejection of one send among several: not yet known. The stored
    # action is cleared (an Unknown attempt never surfaces a challenge), but the provider may
    # still be waiting for the customer: look it up at once, so recovery brings the challenge
    # back within one clock tick rather than after a backoff step (docs/decisions/0026).
    return Decision(new_state=S.UNKNOWN, outcome_reason=evidence.reason, record_provider_id=new_id,
                    clear_action=True, look_up_now=attempt.has_action)


def action_is_current(state: str, next_action: object, expires_at: datetime | None, now: datetime) -> bool:
    """A stored customer action is shown only on a Started attempt and only before its expiry
    (seed 004: "an expired or superseded action is never shown, so an Unknown attempt cannot
    surface a stale challenge")."""
    return state == S.STARTED and next_action is not None and (expires_at is None or expires_at > now)
