"""Every call paygate makes to a provider, for an attempt of any kind: a checkout payment's create,
lookup and payment-method check (seed 004, "The Checkout Endpoint": the payment client) and a
pipeline kind's create and lookup (seed 000), on the provider account STORED on the attempt
(API.md, "provider_fake: CardCo"; docs/decisions/0007: a configuration change never redirects a
send or a lookup), through the account's adapter (``gateway.providers.registry``).

:meth:`ProviderCalls.answered` is the one place a call is made: timed and counted under its kind,
operation, account and outcome (``gateway.instruments.provider_call``), cut off by the caller's
budget and the kind's ceiling on the injected clock, and every way it ends without a readable
answer (either budget, or any of gateway.providers.answers) is :class:`Unanswered`, which a create
returns as :class:`NoResponse` and the outcome vocabulary reads as Unknown
(gateway.domain.outcomes). The API key is read at the call, and for a pipeline kind only after a
confirmed claim (seed 000, "Worker Identity Is Presenter Identity"). Calls go through the
process's shared HTTP client (``Services.http``, the jobs runtime's ``http``), from the account's
own keep-alive pool (``gateway.outbound.pool``: two accounts on one host share no connection): on the
process's aiohttp transport directly, sent with the client's default headers and read to an
:class:`gateway.outbound.Answer` without httpx's request and response; through the client under any
other transport (the tests' respx and httpx transports), its response read to the same answer. No
cookies, retries or redirects either way (docs/decisions/0077). Lookup records
replace a destination token with its digest before anything else sees them (the adapters'
lookups call :meth:`ProviderCalls.digest`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import structlog

from gateway.clock import Clock
from gateway.domain.outcomes import NoResponse, Observation, ProviderResponse
from gateway.domain.provider_listing import Page
from gateway.domain.provider_listing import Unreadable as ListingUnreadable
from gateway.instruments import provider_call
from gateway.outbound import POOL, Answer, OutboundClient, pool
from gateway.providers.answers import CALLER, CEILING, Unanswered, answer
from gateway.providers.base import destination_digest
from gateway.providers.registry import provider_for
from gateway.settings import ProviderAccount

log = structlog.get_logger("gateway.providers")


class CredentialUnavailable(Exception):
    """The provider credential could not be acquired; nothing may be sent."""


class RateLimited(Exception):
    """A lookup answered 429: not "not found" and not a record; the account is to pause
    (seed 004, "pause the sweep"; docs/decisions/0008)."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(retry_after_s)
        self.retry_after_s = retry_after_s


class ProviderCalls:
    """The calls of one attempt kind on one account. ``ceiling_s`` bounds every call whatever the
    caller's budget (the account's ``call_budget_s`` unless the kind says otherwise: checkout's
    is the account's ``maximum_call_duration_s``)."""

    def __init__(self, account: ProviderAccount, clock: Clock, http: httpx.AsyncClient, pepper: str = "", *,
                 kind: str, ceiling_s: float | None = None) -> None:
        self.account = account
        self.provider = provider_for(account.id)
        self.clock = clock
        self.http = http
        self.pepper = pepper
        self.kind = kind  # the attempt kind these calls serve: the ``kind`` label of their metric
        self.ceiling_s = account.call_budget_s if ceiling_s is None else ceiling_s
        self.pool = pool("provider", account.id)  # the account's own connections (gateway.outbound)
        self.direct = http.direct if isinstance(http, OutboundClient) else None
        self.defaults = dict(http.headers)  # what the client would add to every request

    def credential(self) -> str:
        key = self.account.api_key.get_secret_value()
        if not key.strip():
            raise CredentialUnavailable(self.account.id)
        return key

    def url(self, path: str) -> str:
        return self.account.base_url.rstrip("/") + path

    def digest(self, token: str) -> str:
        return destination_digest(self.pepper, token)

    async def send(self, method: str, url: str, headers: Mapping[str, str], content: bytes | None = None) -> Answer:
        """One request from the account's pool, read to its end; raises what httpx raises."""
        if self.direct is None:
            return Answer.of(await self.http.request(method, url, content=content, headers=headers,
                                                     extensions=self.pool))
        named = {name.lower() for name in headers}
        sent = {name: value for name, value in self.defaults.items() if name not in named} | dict(headers)
        return await self.direct.exchange(method, url, sent, content, self.pool[POOL])

    async def answered(self, operation: str, call: Awaitable[Answer],
                       budget_s: float | None = None) -> Answer | Unanswered:
        """The complete answer to ``call``, or why there is none (see the module docstring). Of the
        two budgets only the one that runs out first is set: the caller's when it is shorter than the
        ceiling, else the ceiling (which also names a tie)."""
        caller_first = budget_s is not None and budget_s < self.ceiling_s
        try:
            async with self.clock.budget(budget_s if caller_first else self.ceiling_s):
                # The default send reads the whole body, so truncation surfaces now, not later.
                answered = await answer(provider_call(call, kind=self.kind, operation=operation,
                                                      account=self.account.id))
                if isinstance(answered, Answer):
                    # A support ticket names the request by the provider's id (Stripe's Request-Id).
                    log.info("provider_answered", kind=self.kind, operation=operation,
                             provider_account=self.account.id, http_status=answered.status_code,
                             request_id=answered.headers.get("request-id"))
                return answered
        except TimeoutError:
            return Unanswered("timeout", CALLER if caller_first else CEILING)

    async def create(self, path: str, body: bytes, idempotency_key: str, key: str,
                     budget_s: float | None = None) -> Observation:
        """Send ``body`` once under ``idempotency_key``: the answer, or :class:`NoResponse`."""
        headers = self.provider.headers(self.account, key) | {"Idempotency-Key": idempotency_key}
        response = await self.answered("create", self.send("POST", self.url(path), headers, body), budget_s)
        if isinstance(response, Unanswered):
            return NoResponse(response.kind, response.reason)
        return ProviderResponse(response.status_code, response.content,
                                self.provider.retry_after_s(response.headers),
                                self.provider.resend_allowed(response.headers),
                                response.headers.get("request-id"))

    async def read(self, operation: str, path: str, params: dict[str, str] | None = None,
                   budget_s: float | None = None) -> Answer | Unanswered:
        """A non-mutating read (a lookup, a payment-method check)."""
        try:
            headers = self.provider.headers(self.account, self.credential())
        except CredentialUnavailable:
            return Unanswered("transport", "CredentialUnavailable")
        url = self.url(path) + ("?" + urlencode(params) if params else "")  # as httpx encodes params
        return await self.answered(operation, self.send("GET", url, headers), budget_s)

    async def list_page(self, kind: str, start: datetime, end: datetime,
                        cursor: str | None) -> Page | ListingUnreadable:
        """One page of the provider's listing of ``kind`` created in [start, end) after ``cursor``
        (a read, counted as operation ``list``), each destination token replaced by its digest;
        raises :class:`RateLimited` on a 429."""
        request = self.provider.list_request(kind, start, end, cursor)
        response = await self.read("list", request.path, request.params)
        if isinstance(response, Unanswered):
            return ListingUnreadable(response.reason)
        if self.provider.rate_limited(response.status_code, response.content):
            raise RateLimited(self.provider.retry_after_s(response.headers) or 0.0)
        page = self.provider.list_page(kind, response.status_code, response.content)
        if isinstance(page, ListingUnreadable):
            return page
        return Page(tuple(replace(obj, record=self.without_token(obj.record)) for obj in page.objects), page.cursor)

    def without_token(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record whose destination token became its digest: the token is never kept."""
        kept = dict(record)
        token = kept.pop("destination_token", None)
        if isinstance(token, str):
            kept["destination_digest"] = self.digest(token)
        return kept

    async def get(self, path: str, params: dict[str, str]) -> Any:
        """The JSON document of a 200 answer to a pipeline lookup, or None when the read itself
        failed; raises :class:`RateLimited` on a 429."""
        response = await self.read("lookup", path, params)
        if isinstance(response, Unanswered):
            return None
        if self.provider.rate_limited(response.status_code, response.content):
            raise RateLimited(self.provider.retry_after_s(response.headers) or 0.0)
        try:
            return response.json() if response.status_code == 200 else None
        except ValueError:
            return None
