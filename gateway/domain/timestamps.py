"""The one timestamp format the APIs and evidence use: RFC 3339 in UTC with a ``Z`` suffix
(API.md, "Shapes"). Every aware datetime is normalized to UTC first, so a value read back from
PostgreSQL in another session time zone renders the same. Pure: no I/O."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def rfc3339(moment: datetime) -> str: ...
@overload
def rfc3339(moment: None) -> None: ...
def rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
