"""CardCo calls for one attempt, on the provider account STORED on the attempt (API.md,
"provider_fake: CardCo"; docs/decisions/0007: a configuration change never redirects a send or a
lookup).

The API key is read here, at the call, and only after a confirmed claim (seed 000, "Worker Identity
Is Presenter Identity"). Calls go through the process's shared HTTP client (``Services.http``, the
jobs runtime's ``http``) and are cut off by a budget on the injected clock; every way a create ends
without an answer becomes a :class:`NoResponse`. Lookup records replace a destination token with
its digest before anything else sees them. Every call is timed and counted under the attempt kind
it serves (``gateway.instruments.provider_call``; issue 15 item 3).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import httpx

from gateway.clock import Clock
from gateway.domain.payout_outcomes import NoResponse, Observation, ProviderResponse
from gateway.instruments import PAYOUT_PROVIDER_CALLS, provider_call
from gateway.settings import ProviderAccount


class CredentialUnavailable(Exception):
    """The provider credential could not be acquired; nothing may be sent."""


class RateLimited(Exception):
    """A lookup answered 429: not "not found" and not a record; the account is to pause
    (seed 004, "pause the sweep"; docs/decisions/0008)."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(retry_after_s)
        self.retry_after_s = retry_after_s


def _retry_after_s(response: httpx.Response) -> float:
    retry_after = response.headers.get("retry-after", "0")
    return float(retry_after) if retry_after.isdigit() else 0.0


def destination_digest(pepper: str, token: str) -> str:
    """What evidence may hold about a destination token: its HMAC under the server's pepper."""
    return hmac.new(pepper.encode(), token.encode(), hashlib.sha256).hexdigest()


class ProviderCalls:
    def __init__(self, account: ProviderAccount, clock: Clock, http: httpx.AsyncClient, pepper: str, *,
                 kind: str) -> None:
        self.account = account
        self.clock = clock
        self.http = http
        self.pepper = pepper
        self.kind = kind  # the attempt kind these calls serve: the ``kind`` label of their metrics

    def credential(self) -> str:
        key = self.account.api_key.get_secret_value()
        if not key.strip():
            raise CredentialUnavailable(self.account.id)
        return key

    def url(self, path: str) -> str:
        return self.account.base_url.rstrip("/") + path

    def _headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}", "CardCo-Account": self.account.id,
                "Content-Type": "application/json"}

    async def create(self, path: str, body: bytes, idempotency_key: str, key: str) -> Observation:
        headers = self._headers(key) | {"Idempotency-Key": idempotency_key}
        try:
            async with self.clock.budget(self.account.call_budget_s):
                response = await provider_call(
                    PAYOUT_PROVIDER_CALLS, self.http.post(self.url(path), content=body, headers=headers),
                    kind=self.kind, operation="create")
        except (TimeoutError, httpx.TimeoutException):
            return NoResponse("timeout")
        except httpx.TransportError:
            return NoResponse("transport")
        return ProviderResponse(response.status_code, response.content, _retry_after_s(response))

    async def list(self, path: str, params: dict[str, str]) -> list[dict[str, Any]] | None:
        """The provider's records for a query; None when the lookup itself failed; raises
        :class:`RateLimited` on a 429."""
        try:
            async with self.clock.budget(self.account.call_budget_s):
                response = await provider_call(
                    PAYOUT_PROVIDER_CALLS, self.http.get(self.url(path), params=params,
                                                         headers=self._headers(self.credential())),
                    kind=self.kind, operation="lookup")
            data = response.json()["data"] if response.status_code == 200 else None
        except (TimeoutError, httpx.HTTPError, ValueError, KeyError, TypeError, CredentialUnavailable):
            return None
        if response.status_code == 429:
            raise RateLimited(_retry_after_s(response))
        if not isinstance(data, list):
            return None
        return [self._without_token(record) for record in data if isinstance(record, dict)]

    def _without_token(self, record: dict[str, Any]) -> dict[str, Any]:
        token = record.pop("destination_token", None)
        if isinstance(token, str):
            record["destination_digest"] = destination_digest(self.pepper, token)
        return record
