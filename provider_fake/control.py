"""The control API for testers, `/_control/...` (no auth: bind to loopback).

API.md "provider_fake: CardCo" (control API) and "Precise details -> CardCo control API".
Extensions, documented in docs/rehearsing-incidents.md: `GET /_control/faults`,
`GET /_control/webhooks`, `GET /_control/clock`, `GET|PUT /_control/accounts`,
`POST /_control/payouts/{id}/return`, `POST /_control/payments/{id}/authenticate`,
`POST /_control/payment_methods/{id}/expire`, `POST /_control/objects/{id}/amend`,
`POST /_control/objects/{id}/forget`.
Control requests are not logged, but they too apply due scheduled changes first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from provider_fake.api import parse
from provider_fake.clock import rfc3339
from provider_fake.config import Account
from provider_fake.errors import InvalidRequest, NotFound, ProviderError
from provider_fake.fake import CardCo
from provider_fake.faults import FaultRules
from provider_fake.objects import ProviderObject
from provider_fake.payment_methods import expire as expire_method
from provider_fake.payments import authenticate_payment
from provider_fake.payouts import return_payout
from provider_fake.replies import Reply, render

Document = dict[str, Any]
Found = TypeVar("Found", bound=ProviderObject)


class ClockAdvance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    advance_s: float = Field(ge=0)


class Accounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    accounts: list[Account]


class Authentication(BaseModel):
    model_config = ConfigDict(extra="forbid")

    result: Literal["succeeded", "failed"] = "succeeded"
    # As Stripe.js confirms with the PaymentIntent's client secret: when given, it must be the payment's.
    client_secret: str | None = None


class Amendment(BaseModel):
    """A change made at the provider behind the client's back (extension: reconciliation tests)."""

    model_config = ConfigDict(extra="forbid")

    amount_minor: int | None = Field(default=None, gt=0)
    status: str | None = None


class ControlApi:
    def __init__(self, fake: CardCo) -> None:
        self.fake = fake

    def routes(self) -> list[Route]:
        def route(path: str, handler: Callable[[Request], Awaitable[Document]], method: str) -> Route:
            return Route(f"/_control{path}", self._endpoint(handler), methods=[method])

        return [
            route("/reset", self.reset, "POST"),
            route("/faults", self.faults, "GET"),
            route("/faults", self.replace_faults, "POST"),
            route("/ledger", self.ledger, "GET"),
            route("/requests", self.requests, "GET"),
            route("/webhooks", self.webhooks, "GET"),
            route("/webhooks/deliver", self.deliver, "POST"),
            route("/webhooks/redeliver/{event_id}", self.redeliver, "POST"),
            route("/clock", self.clock, "GET"),
            route("/clock", self.advance_clock, "POST"),
            route("/accounts", self.accounts, "GET"),
            route("/accounts", self.replace_accounts, "PUT"),
            route("/payouts/{id}/return", self.return_payout, "POST"),
            route("/payments/{id}/authenticate", self.authenticate_payment, "POST"),
            route("/payment_methods/{id}/expire", self.expire_payment_method, "POST"),
            route("/objects/{id}/amend", self.amend_object, "POST"),
            route("/objects/{id}/forget", self.forget_object, "POST"),
        ]

    def _endpoint(
        self, handler: Callable[[Request], Awaitable[Document]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            async with self.fake.store.lock:
                self.fake.settle()
            try:
                reply = Reply.ok(await handler(request))
            except ProviderError as error:
                reply = Reply.error(error)
            return await render(reply, None)

        return endpoint

    async def reset(self, request: Request) -> Document:
        async with self.fake.store.lock:
            self.fake.reset()
        return {"reset": True}

    async def faults(self, request: Request) -> Document:
        return {"rules": [rule.model_dump(exclude_defaults=True) for rule in self.fake.faults.rules()]}

    async def replace_faults(self, request: Request) -> Document:
        """Replaces the whole rule set and its occurrence counters; the ledger stays."""
        rules = parse(FaultRules, await request.body()).rules
        self.fake.faults.replace(rules)
        return await self.faults(request)

    async def ledger(self, request: Request) -> Document:
        return self.fake.store.ledger()

    async def requests(self, request: Request) -> Document:
        return {"requests": list(self.fake.store.requests)}

    async def webhooks(self, request: Request) -> Document:
        webhooks = self.fake.webhooks
        return {
            "events": [webhooks.payload(event) | {"account": event.account} for event in webhooks.events.values()],
            "deliveries": [delivery.public() for delivery in webhooks.deliveries],
        }

    async def deliver(self, request: Request) -> Document:
        """Attempts every delivery due by the fake clock now (advance the clock for retries)."""
        attempted = await self.fake.deliver_pending()
        return {"attempted": [delivery.public() for delivery in attempted]}

    async def redeliver(self, request: Request) -> Document:
        """Sends a recorded event again, now, with its original event id and a new webhook-id."""
        try:
            delivery = self.fake.webhooks.redeliver(request.path_params["event_id"])
        except KeyError:
            raise NotFound("no such event") from None
        await self.fake.deliver_pending()
        return delivery.public()

    async def clock(self, request: Request) -> Document:
        return {"now": rfc3339(self.fake.clock.now())}

    async def advance_clock(self, request: Request) -> Document:
        advance = parse(ClockAdvance, await request.body())
        return {"now": rfc3339(self.fake.clock.advance(advance.advance_s))}

    async def accounts(self, request: Request) -> Document:
        return {
            "accounts": [
                account.model_dump() | {"webhook_public_key": account.webhook_public_key()}
                for account in self.fake.config.accounts
            ]
        }

    async def replace_accounts(self, request: Request) -> Document:
        accounts = parse(Accounts, await request.body()).accounts
        self.fake.replace_accounts(accounts)
        return await self.accounts(request)

    async def return_payout(self, request: Request) -> Document:
        async with self.fake.store.lock:
            payout = _find(self.fake.store.payouts, request)
            return_payout(self.fake, payout)
            return payout.public()

    async def authenticate_payment(self, request: Request) -> Document:
        body = await request.body()
        authentication = parse(Authentication, body or b"{}")
        async with self.fake.store.lock:
            payment = _find(self.fake.store.payments, request)
            if authentication.client_secret is not None and \
                    authentication.client_secret != payment.public().get("client_secret"):
                raise InvalidRequest("client_secret is not this payment's")
            authenticate_payment(self.fake, payment, authentication.result == "succeeded")
            return payment.public()

    async def expire_payment_method(self, request: Request) -> Document:
        async with self.fake.store.lock:
            return expire_method(self.fake, request.path_params["id"])

    async def amend_object(self, request: Request) -> Document:
        """Extension: the object's amount or status changes in place, with no event and no new
        sequence: a provider-side record that now disagrees with what its client concluded."""
        amendment = parse(Amendment, await request.body())
        async with self.fake.store.lock:
            obj = _any(self.fake, request)
            obj.amount_minor = amendment.amount_minor or obj.amount_minor
            obj.status = amendment.status or obj.status
            return obj.public()

    async def forget_object(self, request: Request) -> Document:
        """Extension: the provider loses the object: no read (by id, by reference, a listing)
        shows it again; the ledger keeps it, as the ground truth of what took effect."""
        async with self.fake.store.lock:
            obj = _any(self.fake, request)
            obj.forgotten = True
            return obj.public()


def _any(fake: CardCo, request: Request) -> ProviderObject:
    store = fake.store
    for objects in (store.payments, store.refunds, store.payouts, store.recalls):
        if request.path_params["id"] in objects:
            return objects[request.path_params["id"]]
    raise NotFound()


def _find(objects: dict[str, Found], request: Request) -> Found:
    obj = objects.get(request.path_params["id"])
    if obj is None:
        raise NotFound()
    return obj
