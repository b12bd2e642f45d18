"""The campaign's HTTP client for the gateway, as a client behind a load balancer sees it: requests
spread over the web processes; one that meets a dead process (refused, reset, cut mid-answer) or
a 5xx is sent again to the next process after a short pause, within a patience budget. Every
request the campaign makes is one of these: it drives load through HTTP only. Every 5xx
is remembered with its wall-clock time, so the run can tell those inside an injected outage from
the unexpected ones.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx

RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
PATIENCE_S = 30.0
# 5xx answers API.md documents as part of the contract, not a failure: the payment could not be
# moved from NotStarted to Started and nothing was sent (503 with Retry-After).
DOCUMENTED_5XX = frozenset({(503, "payment.not_started")})


class Gateway:
    def __init__(self, http: httpx.AsyncClient, urls: list[str], tokens: dict[str, str]) -> None:
        self._http = http
        self._urls = urls
        self._next = itertools.cycle(range(len(urls)))
        self._tokens = tokens
        self.in_flight: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.server_errors: list[tuple[float, str, int]] = []  # (wall time, "METHOD path", status)

    async def call(self, method: str, path: str, role: str, body: dict[str, Any] | None = None,
                   patience_s: float = PATIENCE_S) -> httpx.Response | None:
        """The answer, or None when no web process answered within ``patience_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience_s
        pause = 0.2
        while True:
            url = self._urls[next(self._next)]
            self.in_flight[url] += 1
            self.counts["http-requests"] += 1
            try:
                response = await self._http.request(method, url + path, json=body,
                                                    headers={"Authorization": f"Bearer {self._tokens[role]}"})
            except httpx.TransportError:
                response = None
                self.counts["http-transport-errors"] += 1
            finally:
                self.in_flight[url] -= 1
            if response is not None and response.status_code not in RETRYABLE_STATUS:
                return response
            if response is not None:
                self.counts[f"http-{response.status_code}"] += 1
                self._note_server_error(method, path, response)
            if loop.time() + pause > deadline:
                return response
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _note_server_error(self, method: str, path: str, response: httpx.Response) -> None:
        try:
            body = response.json()
        except ValueError:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        if (response.status_code, code) in DOCUMENTED_5XX:
            self.counts[f"http-{response.status_code}-{code}"] += 1
            return
        self.server_errors.append((time.time(), f"{method} {path}", response.status_code))

    def server_errors_outside(self, outages: list[tuple[float, float]], grace_s: float) -> tuple[str, ...]:
        """The 5xx answers outside every outage window (each extended by ``grace_s``)."""
        return tuple(f"{datetime.fromtimestamp(at, UTC):%H:%M:%S.%f} {call}: {status}"
                     for at, call, status in self.server_errors
                     if not any(start <= at <= end + grace_s for start, end in outages))

    def busy(self, index: int) -> bool:
        """Whether web process ``index`` (1-based) is serving one of our requests right now."""
        return self.in_flight[self._urls[index - 1]] > 0
