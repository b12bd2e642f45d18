"""Whether a provider call got an answer at all: the one rule every provider call uses (seed 004,
"The Payment Client": "timeouts, cancellation, pipeline rejections, transport failures, incomplete
or unreadable responses" map to Unknown; issue 21 item 6).

A call's own budget (``Clock.budget``) ends it with ``TimeoutError``, which each caller names
itself (the caller's budget, the client's ceiling). Everything httpx raises for a call that ended
without a complete, decodable response is :class:`Unanswered`: timeouts, resets and refused
connections, a peer that closed mid-response, a body that cannot be decoded
(``httpx.DecodingError``), too many redirects. What httpx raises for a call it could not even make
(an invalid URL) is a configuration error and surfaces for alerting.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal

import httpx


@dataclass(frozen=True)
class Unanswered:
    """A call that ended without a readable answer: ``timeout`` or ``transport``, and httpx's
    name for what happened (``ReadTimeout``, ``RemoteProtocolError``, ``DecodingError``...)."""

    kind: Literal["timeout", "transport"]
    error: str


async def answer(call: Awaitable[httpx.Response]) -> httpx.Response | Unanswered:
    """The complete, decoded response of ``call``, or why there is none."""
    try:
        return await call
    except httpx.TimeoutException as error:
        return Unanswered("timeout", type(error).__name__)
    except httpx.HTTPError as error:
        return Unanswered("transport", type(error).__name__)
