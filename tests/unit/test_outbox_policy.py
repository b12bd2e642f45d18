"""Pure outbox decisions (seed 004, "Downstream Work": back off, then dead-letter after a bounded
number of failures) and the Standard Webhooks signature of what paygate sends (NOTES.md vector)."""

from __future__ import annotations

import pytest

from gateway.domain.outbound_webhooks import sign_v1
from gateway.domain.outbox_policy import (
    MAX_ERROR_CHARS,
    BackOff,
    DeadLetter,
    RetryPolicy,
    after_failure,
    dead_letter_escalation_key,
    describe_error,
)
from gateway.store.queries import load_queries

REHEARSAL = RetryPolicy(initial_s=1, max_s=8, max_failures=5)


def test_rehearsal_policy_backs_off_1_2_4_8_then_dead_letters() -> None:
    """API.md: "outbox backoff 1 s doubling to 8 s with dead-lettering after 5 failures"."""
    assert [after_failure(n, REHEARSAL) for n in range(1, 6)] == [
        BackOff(1), BackOff(2), BackOff(4), BackOff(8), DeadLetter()]


def test_the_delay_is_capped_and_never_overflows() -> None:
    policy = RetryPolicy(initial_s=5, max_s=300, max_failures=10_000)
    assert after_failure(7, policy) == BackOff(300)
    assert after_failure(5_000, policy) == BackOff(300)


def test_a_failure_count_below_one_is_a_bug() -> None:
    with pytest.raises(ValueError):
        after_failure(0, REHEARSAL)


def test_errors_are_one_bounded_line() -> None:
    assert describe_error("sink\nanswered   HTTP 500") == "sink answered HTTP 500"
    assert len(describe_error("x" * 5000)) == MAX_ERROR_CHARS


def test_a_dead_letter_escalation_names_its_row() -> None:
    assert dead_letter_escalation_key(42) == "outbox:42:dead-lettered"


def test_signature_matches_the_standard_webhooks_reference_vector() -> None:
    assert sign_v1("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                   b'{"test": 2432232314}') == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_a_secret_without_its_prefix_is_refused() -> None:
    with pytest.raises(ValueError):
        sign_v1("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg", 1, b"{}")


def test_the_dispatcher_and_reminder_queries_load() -> None:
    assert {"claim_due", "mark_dispatched", "back_off", "dead_letter", "retry", "discard"} <= \
        load_queries("gateway.outbox").keys()
    assert {"claim_reminder", "due_reminders", "acknowledge", "resolve_open", "list_escalations"} <= \
        load_queries("gateway.escalations").keys()
