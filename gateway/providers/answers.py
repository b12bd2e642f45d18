"""Whether a provider call got an answer at all: the one rule every provider call uses (seed 004,
"The Payment Client": "timeouts, cancellation, pipeline rejections, transport failures, incomplete
or unreadable responses" map to Unknown).

A call's budgets (``Clock.budget``) end it with ``TimeoutError``, named by which one fired: the
caller's budget (:data:`CALLER`) or the kind's ceiling (:data:`CEILING`,
gateway.providers.calls). Everything httpx raises for a call that ended
without a complete, decodable response is :class:`Unanswered`: timeouts, resets and refused
connections, a peer that closed mid-response, a body that cannot be decoded
(``httpx.DecodingError``), too many redirects. What httpx raises for a call it could not even make
(an invalid URL) is a configuration error and surfaces for alerting.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal, TypeVar

import httpx

CALLER = "caller"  # the caller's budget ran out
CEILING = "client-ceiling"  # the kind's ceiling on every call ran out, whatever the caller's budget


@dataclass(frozen=True)
class Unanswered:
    """A call that ended without a readable answer: ``timeout`` or ``transport``, and which budget
    ran out or httpx's name for what happened (``ReadTimeout``, ``RemoteProtocolError``,
    ``DecodingError``...)."""

    kind: Literal["timeout", "transport"]
    error: str

    @property
    def reason(self) -> str:
        """The reason code an Unknown outcome records: ``provider.no-response.<budget>`` or
        ``provider.transport.<what httpx raised>``."""
        if self.error in (CALLER, CEILING):
            return f"provider.no-response.{self.error}"
        return f"provider.transport.{self.error}"


T = TypeVar("T")


async def answer(call: Awaitable[T]) -> T | Unanswered:
    """The complete, decoded response of ``call``, or why there is none."""
    try:
        return await call
    except httpx.TimeoutException as error:
        return Unanswered("timeout", type(error).__name__)
    except httpx.HTTPError as error:
        return Unanswered("transport", type(error).__name__)
