"""The fake's own clock.

API.md "CardCo control API": `POST /_control/clock {"advance_s"}` moves the fake's clock and
`POST /_control/reset` clears the offset. Every deadline inside CardCo (idempotency retention,
payout expiry, processing completion, webhook retries, visibility) reads this clock, so tests
advance it instead of sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta


def utc_now() -> datetime:
    """The real time, timezone-aware UTC."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """RFC 3339 UTC text, `Z` suffix; milliseconds only when the moment has any."""
    timespec = "milliseconds" if moment.microsecond else "seconds"
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


class Clock:
    """A base time source (real UTC by default, injectable) plus an offset moved by advance()."""

    def __init__(self, base: Callable[[], datetime] = utc_now) -> None:
        self._base = base
        self._offset = timedelta()

    def now(self) -> datetime:
        return self._base() + self._offset

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward (never backward) and return the new now."""
        if seconds < 0:
            raise ValueError("the fake clock only moves forward")
        self._offset += timedelta(seconds=seconds)
        return self.now()

    def reset(self) -> None:
        self._offset = timedelta()
