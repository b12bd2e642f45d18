"""Provider calls for one attempt, on the provider account STORED on the attempt (API.md,
"provider_fake: CardCo"; docs/decisions/0007: a configuration change never redirects a send or a
lookup), through the account's adapter (``gateway.providers.registry``).

The API key is read here, at the call, and only after a confirmed claim (seed 000, "Worker Identity
Is Presenter Identity"). Calls go through the process's shared HTTP client (``Services.http``, the
jobs runtime's ``http``) and are cut off by a budget on the injected clock; every way a create ends
without a readable answer (its budget, or any of gateway.providers.answers) becomes a
:class:`NoResponse`, which the executor records as Unknown at once. Lookup records replace a
destination token with its digest before anything else sees them (the adapters' lookups call
:meth:`ProviderCalls.digest`).
"""

from __future__ import annotations

from typing import Any

import httpx

from gateway.clock import Clock
from gateway.domain.outcomes import NoResponse, Observation, ProviderResponse
from gateway.domain.provider_evidence import retry_after_s
from gateway.instruments import PAYOUT_PROVIDER_CALLS, provider_call
from gateway.providers.answers import Unanswered, answer
from gateway.providers.base import destination_digest
from gateway.providers.registry import provider_for
from gateway.settings import ProviderAccount


class CredentialUnavailable(Exception):
    """The provider credential could not be acquired; nothing may be sent."""


class RateLimited(Exception):
    """A lookup answered 429: not "not found" and not a record; the account is to pause
    (seed 004, "pause the sweep"; docs/decisions/0008)."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(retry_after_s)
        self.retry_after_s = retry_after_s


class ProviderCalls:
    def __init__(self, account: ProviderAccount, clock: Clock, http: httpx.AsyncClient, pepper: str, *,
                 kind: str) -> None:
        self.account = account
        self.provider = provider_for(account.id)
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

    def digest(self, token: str) -> str:
        return destination_digest(self.pepper, token)

    async def create(self, path: str, body: bytes, idempotency_key: str, key: str) -> Observation:
        headers = self.provider.headers(self.account, key) | {"Idempotency-Key": idempotency_key}
        try:
            async with self.clock.budget(self.account.call_budget_s):
                response = await answer(provider_call(
                    PAYOUT_PROVIDER_CALLS, self.http.post(self.url(path), content=body, headers=headers),
                    account=self.account.id, kind=self.kind, operation="create"))
        except TimeoutError:
            return NoResponse("timeout")
        if isinstance(response, Unanswered):
            return NoResponse(response.kind)
        return ProviderResponse(response.status_code, response.content,
                                retry_after_s(response.headers.get("retry-after")),
                                self.provider.resend_allowed(response.headers))

    async def get(self, path: str, params: dict[str, str]) -> Any:
        """The JSON document of a 200 answer to a read, or None when the read itself failed;
        raises :class:`RateLimited` on a 429."""
        try:
            headers = self.provider.headers(self.account, self.credential())
            async with self.clock.budget(self.account.call_budget_s):
                response = await answer(provider_call(
                    PAYOUT_PROVIDER_CALLS, self.http.get(self.url(path), params=params, headers=headers),
                    account=self.account.id, kind=self.kind, operation="lookup"))
        except (TimeoutError, CredentialUnavailable):
            return None
        if isinstance(response, Unanswered):
            return None
        if response.status_code == 429:
            raise RateLimited(retry_after_s(response.headers.get("retry-after")) or 0.0)
        try:
            return response.json() if response.status_code == 200 else None
        except ValueError:
            return None
