"""The campaign's HTTP client for the gateway, as a client behind a load balancer sees it: requests
spread over the web processes; one that meets a dead process (refused, reset, cut mid-answer) or
a 5xx is sent again to the next process after a short pause, within a patience budget. Every
request the campaign makes is one of these: it drives load through HTTP only (issue 12).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from typing import Any

import httpx

RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
PATIENCE_S = 30.0


class Gateway:
    def __init__(self, http: httpx.AsyncClient, urls: list[str], tokens: dict[str, str]) -> None:
        self._http = http
        self._urls = urls
        self._next = itertools.cycle(range(len(urls)))
        self._tokens = tokens
        self.in_flight: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

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
            if loop.time() + pause > deadline:
                return response
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    def busy(self, index: int) -> bool:
        """Whether web process ``index`` (1-based) is serving one of our requests right now."""
        return self.in_flight[self._urls[index - 1]] > 0
