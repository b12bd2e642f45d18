"""API.md "Provider notifications" (payout.*) against seed 000's rules: a notification resolves an
attempt in flight through the reconciler's conditional transition, never overwrites a final state
with a contradiction, and records a return as a separate lifecycle event (section 13)."""

from __future__ import annotations

import pytest

from gateway.domain.evidence_rule import Escalate, Keep, Later, Verdict, Write, classified, verdict
from gateway.domain.outcomes import AttemptState, Expected, classify_record
from gateway.providers.cardco.tables import PAYOUT_TABLE

S = AttemptState
EXPECTED = Expected("PAY-3107-a1", 425_000, "EUR")


def decide(state: AttemptState, recorded_id: str | None, record: object) -> Verdict:
    return verdict(state, recorded_id, classified(record))  # type: ignore[arg-type]


def seen(status: str, amount: int = 425_000, provider_id: str = "po_1"):  # type: ignore[no-untyped-def]
    return classify_record({"id": provider_id, "client_reference": "PAY-3107-a1", "amount_minor": amount,
                            "currency": "EUR", "status": status}, EXPECTED, PAYOUT_TABLE)


@pytest.mark.parametrize(("state", "status", "action"), [
    (S.UNKNOWN, "paid", Write(S.SUCCEEDED, (S.STARTED, S.UNKNOWN))),
    (S.STARTED, "paid", Write(S.SUCCEEDED, (S.STARTED, S.UNKNOWN))),
    (S.UNKNOWN, "failed", Write(S.FAILED, (S.STARTED, S.UNKNOWN))),
    (S.UNKNOWN, "returned", Write(S.SUCCEEDED, (S.STARTED, S.UNKNOWN))),
    (S.UNKNOWN, "processing", Write(S.STARTED, (S.UNKNOWN,))),
    (S.STARTED, "processing", Keep("already-recorded")),
    (S.SUCCEEDED, "paid", Keep("already-recorded")),
    (S.SUCCEEDED, "processing", Keep("stale")),
    (S.FAILED, "processing", Keep("stale")),
    (S.SUCCEEDED, "returned", Later()),
    (S.FAILED, "failed", Keep("already-recorded")),
    (S.NOT_APPLIED, "failed", Keep("already-recorded")),
    (S.SUCCEEDED, "failed", Escalate("contradiction")),
    (S.FAILED, "paid", Escalate("contradiction")),
    (S.NOT_APPLIED, "paid", Escalate("contradiction")),
    (S.NOT_APPLIED, "processing", Escalate("contradiction")),
    (S.CLAIMED, "paid", Escalate("contradiction")),
    (S.NOT_STARTED, "processing", Escalate("contradiction")),
])
def test_each_attempt_state_and_status(state: AttemptState, status: str, action: object) -> None:
    assert decide(state, None, seen(status)) == action


def test_a_record_that_is_not_the_attempts_is_a_mismatch_whatever_the_state() -> None:
    """Seed 000 section 13: verify amount, currency and reference before trusting a record."""
    assert decide(S.UNKNOWN, None, seen("paid", amount=1)) == Escalate("mismatch")
    assert decide(S.SUCCEEDED, None, seen("paid", amount=1)) == Escalate("mismatch")


def test_another_provider_id_than_the_recorded_one_is_escalated() -> None:
    """Seed 004: a different provider id for the same attempt is never silently accepted (a
    pipeline kind escalates it as a mismatch, gateway.pipeline.notifications)."""
    assert decide(S.UNKNOWN, "po_other", seen("paid")) == Escalate("other-id")
    assert decide(S.UNKNOWN, "po_1", seen("paid")) == Write(S.SUCCEEDED, (S.STARTED, S.UNKNOWN))
