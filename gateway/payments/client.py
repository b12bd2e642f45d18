"""The payment client (seed 004, "The Checkout Endpoint": the payment client).

It sends an attempt's *stored* request, byte for byte, under the attempt's own idempotency key,
and never resends, generates a key, or changes a business parameter. Only the transport is built
at send time: the current credentials and the account header for the stored provider account,
never whichever account is a default. Every way a call ends without an answer — a stored request
that cannot be built, the caller's budget, the client's maximum call duration, a transport error,
an incomplete or unreadable response (gateway.providers.answers: the one rule every provider call
uses), a 5xx — is ``unknown`` with a reason. A programming or configuration error is allowed to
surface for alerting instead of being disguised as an outcome.
Every call is timed and counted (``gateway.instruments.provider_call``; issue 15 item 3).
What the request and its answers look like is the account's provider's (``gateway.providers``).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from gateway.clock import Clock
from gateway.domain.attempts import Evidence
from gateway.domain.provider_evidence import Lookup
from gateway.instruments import PAYMENT_PROVIDER_CALLS, provider_call
from gateway.providers import provider_for
from gateway.providers.answers import Unanswered, answer
from gateway.settings import ProviderAccount, Settings


@dataclass(frozen=True)
class StoredRequest:
    """Everything that defines one attempt's request; fixed for the attempt's life."""

    provider_account: str
    endpoint: str
    api_version: str
    idempotency_key: str
    request_body: str


class NotBuildable(Exception):
    """The stored request cannot be applied to the current configuration."""


def payments_endpoint(account: ProviderAccount) -> str:
    return provider_for(account.id).payments_endpoint(account)


def _unknown(account: str, reason: str) -> Evidence:
    return Evidence(finding="unknown", provider_account=account, reason=reason)


class PaymentClient:
    def __init__(self, settings: Settings, clock: Clock, http: httpx.AsyncClient) -> None:
        self._settings = settings
        self._clock = clock
        self._http = http

    def _credentials(self, account: ProviderAccount) -> dict[str, str]:
        return provider_for(account.id).headers(account, account.api_key.get_secret_value())

    def build(self, stored: StoredRequest) -> httpx.Request:
        """The transport request for ``stored``; refuses anything that would send it elsewhere
        (seed 004 matrix: "A changed endpoint, region, or account between sends, or a stored
        account that is no longer configured, is refused before anything is sent")."""
        account = self._settings.account(stored.provider_account)
        if account is None:
            raise NotBuildable("account-not-configured")
        if payments_endpoint(account) != stored.endpoint:
            raise NotBuildable("endpoint-changed")
        if account.api_version != stored.api_version:
            raise NotBuildable("api-version-changed")
        return self._http.build_request(
            "POST",
            stored.endpoint,
            content=stored.request_body.encode("utf-8"),
            headers={**self._credentials(account), "Idempotency-Key": stored.idempotency_key},
        )

    def ceiling_s(self, provider_account: str) -> float:
        account = self._settings.account(provider_account)
        return account.maximum_call_duration_s if account else min(
            (a.maximum_call_duration_s for a in self._settings.provider_accounts), default=30.0)

    async def create_payment(self, stored: StoredRequest, budget_s: float | None = None) -> Evidence:
        """Send ``stored`` once. ``budget_s`` is the caller's; the account's maximum call
        duration applies even when the caller passes none."""
        account = stored.provider_account
        try:
            request = self.build(stored)
        except NotBuildable as problem:
            # Still Unknown, not NotApplied: this call cannot prove the attempt had no earlier send.
            return _unknown(account, f"request.not-buildable.{problem}")
        try:
            async with self._clock.budget(self.ceiling_s(account)):
                try:
                    async with self._clock.budget(budget_s):
                        # The default send reads the whole body, so truncation surfaces now, not later.
                        response = await answer(provider_call(PAYMENT_PROVIDER_CALLS, self._http.send(request),
                                                              account=account, operation="create"))
                except TimeoutError:
                    return _unknown(account, "provider.no-response.caller")
        except TimeoutError:
            return _unknown(account, "provider.no-response.client-ceiling")
        if isinstance(response, Unanswered):
            return _unknown(account, f"provider.transport.{response.error}")
        return provider_for(account).payment_evidence(account, response.status_code, response.content)

    async def find_payment(self, provider_account: str, *, provider_payment_id: str | None = None,
                           client_reference: str | None = None, budget_s: float | None = None) -> Lookup:
        """A non-mutating lookup by provider payment ID, or by account + client reference."""
        account = self._settings.account(provider_account)
        if account is None:
            return Lookup("failed", reason="request.not-buildable.account-not-configured")
        provider = provider_for(account.id)
        path, params = provider.payment_lookup(provider_payment_id=provider_payment_id,
                                               client_reference=client_reference)
        url = account.base_url.rstrip("/") + path
        try:
            async with self._clock.budget(min(budget_s or account.maximum_call_duration_s,
                                              account.maximum_call_duration_s)):
                response = await answer(provider_call(
                    PAYMENT_PROVIDER_CALLS, self._http.get(url, params=params, headers=self._credentials(account)),
                    account=account.id, operation="lookup"))
        except TimeoutError:
            return Lookup("failed", reason="provider.no-response")
        if isinstance(response, Unanswered):
            return Lookup("failed", reason=f"provider.transport.{response.error}")
        return provider.lookup_result(response.status_code, response.content, response.headers.get("retry-after"),
                                      listing=not provider_payment_id)

    async def payment_method_usable(self, provider_account: str, payment_method: str,
                                    budget_s: float | None = None) -> bool | None:
        """Whether the provider still accepts ``payment_method`` for the account (seed 004: resend
        only "while the payment method is still usable"); None when that could not be established."""
        account = self._settings.account(provider_account)
        if account is None:
            return None
        provider = provider_for(account.id)
        url = account.base_url.rstrip("/") + provider.payment_method_path(payment_method)
        try:
            async with self._clock.budget(min(budget_s or account.maximum_call_duration_s,
                                              account.maximum_call_duration_s)):
                response = await answer(provider_call(PAYMENT_PROVIDER_CALLS,
                                                      self._http.get(url, headers=self._credentials(account)),
                                                      account=account.id, operation="payment_method"))
        except TimeoutError:
            return None
        if isinstance(response, Unanswered):
            return None
        return provider.payment_method_usable(response.status_code, response.content, self._clock.now())
