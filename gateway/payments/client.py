"""The payment client (seed 004, "The Checkout Endpoint": the payment client).

It sends an attempt's *stored* request, byte for byte, under the attempt's own idempotency key,
and never resends, generates a key, or changes a business parameter. Only the transport is built
at send time: the current credentials and the account header for the stored provider account,
never whichever account is a default. A stored request that cannot be built is ``unknown`` with
its reason; every call goes through the one provider-call client
(:class:`gateway.providers.calls.ProviderCalls`, kind ``payment``, its ceiling the account's
maximum call duration), which times and counts it and turns every way it ends without a readable
answer into ``NoResponse``: ``unknown`` with its reason here. A 5xx is the provider's
``unknown`` (gateway.providers). A programming or configuration error is allowed to surface for
alerting instead of being disguised as an outcome.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

import httpx

from gateway.clock import Clock
from gateway.domain.attempt_kinds import PAYMENT
from gateway.domain.attempts import Evidence
from gateway.domain.outcomes import NoResponse
from gateway.domain.provider_evidence import Lookup
from gateway.providers import checkout, provider_for
from gateway.providers.answers import Unanswered
from gateway.providers.calls import ProviderCalls
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
    return checkout(provider_for(account.id)).endpoint(account)



class PaymentClient:
    def __init__(self, settings: Settings, clock: Clock, http: httpx.AsyncClient) -> None:
        self._settings = settings
        self._clock = clock
        self._http = http
        self._made: dict[str, ProviderCalls] = {}

    def _calls(self, account: ProviderAccount) -> ProviderCalls:
        """The account's calls, made once per account configuration and client (a ProviderCalls
        holds nothing a call changes; the API key is still read at each call)."""
        calls = self._made.get(account.id)
        if calls is None or calls.account is not account or calls.http is not self._http:
            calls = self._made[account.id] = ProviderCalls(account, self._clock, self._http, kind=PAYMENT.name,
                                                           ceiling_s=account.maximum_call_duration_s)
        return calls

    def build(self, stored: StoredRequest) -> ProviderAccount:
        """The account ``stored`` goes to; refuses anything that would send it elsewhere
        (seed 004 matrix: "A changed endpoint, region, or account between sends, or a stored
        account that is no longer configured, is refused before anything is sent")."""
        account = self._settings.account(stored.provider_account)
        if account is None:
            raise NotBuildable("account-not-configured")
        if payments_endpoint(account) != stored.endpoint:
            raise NotBuildable("endpoint-changed")
        if account.api_version != stored.api_version:
            raise NotBuildable("api-version-changed")
        return account

    async def create_payment(self, stored: StoredRequest, budget_s: float | None = None) -> Evidence:
        """Send ``stored`` once. ``budget_s`` is the caller's; the account's maximum call
        duration applies even when the caller passes none."""
        try:
            account = self.build(stored)
        except NotBuildable as problem:
            # Still Unknown, not NotApplied: this call cannot prove the attempt had no earlier send.
            return Evidence.unknown(stored.provider_account, f"request.not-buildable.{problem}")
        calls = self._calls(account)
        path = stored.endpoint.removeprefix(calls.url(""))  # build() proved the endpoint is the account's
        body = stored.request_body.encode("utf-8")
        observation = await calls.create(path, body, stored.idempotency_key, account.api_key.get_secret_value(),
                                         budget_s)
        if isinstance(observation, NoResponse):
            return Evidence.unknown(account.id, observation.reason)
        evidence = checkout(calls.provider).evidence(account.id, observation.status, observation.body)
        if observation.request_id is None:
            return evidence
        # Kept in the attempt's history with the evidence: a support ticket names the request.
        return dataclasses.replace(evidence, details={**evidence.details, "request_id": observation.request_id})

    async def find_payment(self, provider_account: str, *, provider_id: str | None = None,
                           client_reference: str | None = None, since: datetime | None = None,
                           budget_s: float | None = None) -> Lookup:
        """A non-mutating lookup by provider payment ID, or by account + client reference (of a
        payment created no earlier than ``since``, the attempt's creation, where the account looks
        payments up by listing them)."""
        account = self._settings.account(provider_account)
        if account is None:
            return Lookup("failed", reason="request.not-buildable.account-not-configured")
        calls = self._calls(account)
        contract = checkout(calls.provider)
        path, params = contract.lookup(provider_id=provider_id, client_reference=client_reference, account=account,
                                       since=since)
        response = await calls.read("lookup", path, params, budget_s)
        if isinstance(response, Unanswered):
            return Lookup("failed", reason=response.reason)
        found = contract.lookup_result(response.status_code, response.content, response.headers.get("retry-after"),
                                       listing=not provider_id, client_reference=client_reference)
        return dataclasses.replace(found, request_id=response.headers.get("request-id"))

    async def client_secret(self, provider_account: str, provider_id: str, budget_s: float | None = None) -> str | None:
        """The payment's client secret, read live from the provider (a lookup by id, counted as
        operation ``client_secret``), for the owning customer's browser SDK; None when the provider
        has none or the read failed. The answer is read for the secret only: it is neither logged
        (:meth:`ProviderCalls.answered` logs the status and the request id) nor kept."""
        account = self._settings.account(provider_account)
        if account is None:
            return None
        calls = self._calls(account)
        contract = checkout(calls.provider)
        path, params = contract.lookup(provider_id=provider_id, client_reference=None, account=account)
        response = await calls.read("client_secret", path, params, budget_s)
        if isinstance(response, Unanswered):
            return None
        return contract.client_secret(response.status_code, response.content)

    async def payment_method_usable(self, provider_account: str, payment_method: str,
                                    budget_s: float | None = None) -> bool | None:
        """Whether the provider still accepts ``payment_method`` for the account (seed 004: resend
        only "while the payment method is still usable"); None when that could not be established."""
        account = self._settings.account(provider_account)
        if account is None:
            return None
        calls = self._calls(account)
        contract = checkout(calls.provider)
        response = await calls.read("payment_method", contract.method_path(payment_method), budget_s=budget_s)
        if isinstance(response, Unanswered):
            return None
        return contract.method_usable(response.status_code, response.content, self._clock.now())
