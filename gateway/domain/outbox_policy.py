"""What the outbox dispatcher does after a failed delivery (seed 004, "Downstream Work": "The
dispatcher counts attempts, records the last error, backs off using next_attempt_at, and
dead-letters a row after a bounded number of failures").

Pure: the caller passes the policy's numbers and the failure count, and gets back a decision.
"""

from __future__ import annotations

from dataclasses import dataclass

# A last_error is a diagnosis for an operator, never a dump of what the receiver answered.
MAX_ERROR_CHARS = 300


@dataclass(frozen=True)
class RetryPolicy:
    """Back off from ``initial_s``, doubling up to ``max_s``; dead-letter at ``max_failures``."""

    initial_s: float
    max_s: float
    max_failures: int


@dataclass(frozen=True)
class BackOff:
    delay_s: float


@dataclass(frozen=True)
class DeadLetter:
    pass


def after_failure(failures: int, policy: RetryPolicy) -> BackOff | DeadLetter:
    """The decision once a row has failed ``failures`` times in all (this failure included).

    The n-th failure waits ``initial * 2**(n-1)`` seconds, capped at ``max_s``; the
    ``max_failures``-th failure dead-letters the row (rehearsal: 1, 2, 4, 8 s, then dead).
    """
    if failures < 1:
        raise ValueError("after_failure needs at least one failure")
    if failures >= policy.max_failures:
        return DeadLetter()
    # Cap the exponent before raising 2 to it, so a huge failure count cannot overflow a float.
    return BackOff(min(policy.initial_s * 2 ** min(failures - 1, 62), policy.max_s))


def dead_letter_escalation_key(message_id: int) -> str:
    """The escalation a dead-lettered row raises: one open episode per row."""
    return f"outbox:{message_id}:dead-lettered"


def describe_error(error: str) -> str:
    """A last_error that fits the column's purpose: one line, bounded, no receiver body."""
    line = " ".join(error.split())
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"
