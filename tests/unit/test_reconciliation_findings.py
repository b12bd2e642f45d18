"""What a provider-side reconciliation run concludes about one listed object, by the one evidence
rule (gateway/domain/reconciliation.py; docs/decisions/0071), and when it may call an object
missing (seed 004, "The Recovery Loop": a lookup that cannot see an object yet proves nothing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.domain.evidence_rule import Seen
from gateway.domain.outcomes import AttemptState as S
from gateway.domain.reconciliation import escalation_key, finding, missing_before, scheduled_window

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(("state", "recorded", "seen", "expected"), [
    (None, None, Seen(S.SUCCEEDED, "pay_1"), "orphan"),
    (S.SUCCEEDED, "pay_1", Seen(S.SUCCEEDED, "pay_1"), "matched"),
    (S.SUCCEEDED, "pay_1", Seen(S.SUCCEEDED, "pay_1", later=True), "matched"),  # refunded afterwards
    (S.SUCCEEDED, "pay_1", Seen(S.STARTED, "pay_1"), "matched"),  # an older step
    (S.FAILED, None, Seen(S.NOT_APPLIED, "pay_1"), "matched"),
    (S.UNKNOWN, None, Seen(S.SUCCEEDED, "pay_1"), "evidence"),
    (S.STARTED, "pay_1", Seen(S.FAILED, "pay_1"), "evidence"),
    (S.UNKNOWN, None, Seen(S.STARTED, "pay_1"), "evidence"),
    (S.STARTED, "pay_1", Seen(S.STARTED, "pay_1"), "matched"),  # still processing, as recorded
    (S.SUCCEEDED, "pay_1", Seen(S.SUCCEEDED, "pay_1", matches=False), "disagreement"),  # tampered amount
    (S.UNKNOWN, None, Seen(S.SUCCEEDED, "pay_1", matches=False), "disagreement"),
    (S.FAILED, "pay_1", Seen(S.SUCCEEDED, "pay_1"), "disagreement"),
    (S.SUCCEEDED, "pay_1", Seen(S.SUCCEEDED, "pay_2"), "disagreement"),  # another provider id
    (S.NOT_STARTED, None, Seen(S.SUCCEEDED, "pay_1"), "disagreement"),  # never sent, yet charged
    (S.SUCCEEDED, "pay_1", None, "disagreement"),  # the id and the reference name two attempts
])
def test_a_listed_object_is_classified_by_the_one_evidence_rule(state, recorded, seen, expected) -> None:
    assert finding(state, recorded, seen) == expected


def test_missing_waits_for_the_send_slack_and_the_listing_delay() -> None:
    assert missing_before(NOW, NOW + timedelta(hours=1), 10) == NOW - timedelta(seconds=60)
    assert missing_before(NOW, NOW, 120) == NOW - timedelta(seconds=120)


def test_one_escalation_key_per_class_and_object() -> None:
    assert escalation_key("cardco:acct:test", "payout", "po_1", "orphan") == \
        "provider-orphan:cardco:acct:test:payout:po_1"
    assert escalation_key("cardco:acct:test", "payout", "po_1", "missing").startswith("provider-missing:")


def test_a_scheduled_window_covers_the_interval_and_the_overlap_before_it() -> None:
    assert scheduled_window(NOW, 86_400, 3_600) == (NOW - timedelta(seconds=90_000), NOW)
