"""CardCo's provider API, `/v1/...`.

API.md "provider_fake: CardCo": every request needs `Authorization: Bearer <api key>` and
`CardCo-Account: <account>` (401 `unauthorized` otherwise), and every one is logged for
`GET /_control/requests` (method, path with query, lower-case headers with credentials
redacted, exact body bytes) before anything else happens; once handled, the entry also names the
fault rule that applied to it, if any (`"fault": "<operation>:<action>"`, extension: what fired).
Due scheduled changes are applied first, so a request always sees the state the fake clock implies.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from provider_fake.clock import rfc3339
from provider_fake.config import Account
from provider_fake.errors import InvalidRequest, NotFound, ProviderError
from provider_fake.fake import CardCo
from provider_fake.faults import FaultRule
from provider_fake.listing import window_page
from provider_fake.objects import Payment, Payout, PayoutRecall, ProviderObject, Refund
from provider_fake.payment_methods import describe as describe_method
from provider_fake.payments import PaymentRequest, RefundParams, RefundRequest, create_payment, refund_payment
from provider_fake.payouts import PayoutRequest, RecallParams, RecallRequest, create_payout, create_recall
from provider_fake.replies import Reply, render

REDACTED_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})

Model = TypeVar("Model", bound=BaseModel)
Creation = TypeVar("Creation", PaymentRequest, PayoutRequest)
Handler = Callable[[Request, Account, bytes], Awaitable[tuple[Reply, FaultRule | None]]]


def parse(model: type[Model], body: bytes) -> Model:
    """The validated JSON body; 400 `invalid_request` (no effect, nothing saved) otherwise."""
    try:
        return model.model_validate(json.loads(body))
    except (ValueError, ValidationError) as error:
        raise InvalidRequest(f"invalid request body: {error}") from error


def idempotency_key(request: Request) -> str:
    key = request.headers.get("idempotency-key", "")
    if not 0 < len(key) <= 255:
        raise InvalidRequest("an Idempotency-Key header of 1 to 255 characters is required")
    return key


def bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" and token else None


def request_record(request: Request, body: bytes, received_at: str) -> dict[str, object]:
    """One entry of `GET /_control/requests`."""
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    headers = {
        name: "[redacted]" if name in REDACTED_HEADERS else value for name, value in request.headers.items()
    }
    return {
        "method": request.method,
        "path": path,
        "headers": headers,
        "body_base64": base64.b64encode(body).decode(),
        "received_at": received_at,
    }


async def received(fake: CardCo, request: Request, body: bytes) -> dict[str, object]:
    """Log the request for `GET /_control/requests`, then apply the changes due by now; the
    logged entry, for :func:`note_fault`."""
    record = request_record(request, body, rfc3339(fake.clock.now()))
    async with fake.store.lock:
        fake.store.requests.append(record)
        fake.settle()
    return record


def note_fault(record: dict[str, object], rule: FaultRule | None) -> None:
    """Name in the logged request the fault rule that applied to it (extension): the request log
    then says which faults actually fired, not only which rules were installed."""
    if rule is not None:
        record["fault"] = f"{rule.operation}:{rule.action}"


class ProviderApi:
    def __init__(self, fake: CardCo) -> None:
        self.fake = fake

    def routes(self) -> list[Route]:
        store = self.fake.store
        return [
            Route("/v1/payments", self._endpoint(self.create_payment), methods=["POST"]),
            Route("/v1/payments", self._endpoint(self.list_of("list_payments", Payment.kind)), methods=["GET"]),
            Route(
                "/v1/payments/{id}",
                self._endpoint(self.one_of("get_payment", store.payments)),
                methods=["GET"],
            ),
            Route("/v1/payments/{id}/refunds", self._endpoint(self.refund_payment), methods=["POST"]),
            Route("/v1/refunds", self._endpoint(self.list_of("list_refunds", Refund.kind)), methods=["GET"]),
            Route("/v1/refunds/{id}", self._endpoint(self.one_of("get_refund", store.refunds)), methods=["GET"]),
            Route("/v1/payment_methods/{id}", self._endpoint(self.get_payment_method), methods=["GET"]),
            Route("/v1/payouts", self._endpoint(self.create_payout), methods=["POST"]),
            Route("/v1/payouts", self._endpoint(self.list_of("list_payouts", Payout.kind)), methods=["GET"]),
            Route(
                "/v1/payouts/{id}", self._endpoint(self.one_of("get_payout", store.payouts)), methods=["GET"]
            ),
            Route("/v1/payouts/{id}/recalls", self._endpoint(self.create_recall), methods=["POST"]),
            Route(
                "/v1/payout_recalls", self._endpoint(self.list_of("list_recalls", PayoutRecall.kind)), methods=["GET"]
            ),
        ]

    def _endpoint(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Log, settle, authenticate, handle; render the reply under the request's fault rule."""

        async def endpoint(request: Request) -> Response:
            body = await request.body()
            record = await received(self.fake, request, body)
            rule: FaultRule | None = None
            try:
                account = self.fake.authenticate(request.headers.get("cardco-account"), bearer(request))
                reply, rule = await handler(request, account, body)
            except ProviderError as error:
                reply = Reply.error(error)
            note_fault(record, rule)
            return await render(reply, rule)

        return endpoint

    async def create_payment(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        base_url = str(request.base_url).rstrip("/")

        def effect(key: str, params: PaymentRequest, rule: FaultRule | None) -> Reply:
            return create_payment(self.fake, account, key, params, rule, base_url)

        return await self._create(request, account, body, "create_payment", PaymentRequest, effect)

    async def create_payout(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        def effect(key: str, params: PayoutRequest, rule: FaultRule | None) -> Reply:
            return create_payout(self.fake, account, key, params, rule)

        return await self._create(request, account, body, "create_payout", PayoutRequest, effect)

    async def _create(
        self,
        request: Request,
        account: Account,
        body: bytes,
        operation: str,
        model: type[Creation],
        effect: Callable[[str, Creation, FaultRule | None], Reply],
    ) -> tuple[Reply, FaultRule | None]:
        """An idempotent create: the key, the validated body, the rule for its client reference."""
        key = idempotency_key(request)
        params = parse(model, body)
        rule = self.fake.faults.match(operation, params.client_reference)
        reply = await self.fake.create(
            operation, account, key, params, rule, lambda: effect(key, params, rule)
        )
        return reply, rule

    async def create_recall(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """Extension: a recall of a paid payout, idempotent by key like every create."""
        key = idempotency_key(request)
        params = RecallParams(**parse(RecallRequest, body).model_dump(), payout_id=request.path_params["id"])
        rule = self.fake.faults.match("create_recall", params.client_reference)
        reply = await self.fake.create(
            "create_recall", account, key, params, rule, lambda: create_recall(self.fake, account, key, params, rule)
        )
        return reply, rule

    async def refund_payment(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """Extension: a full refund of a succeeded payment, idempotent by key like every create."""
        key = idempotency_key(request)
        params = RefundParams(**parse(RefundRequest, body).model_dump(), payment_id=request.path_params["id"])
        rule = self.fake.faults.match("refund_payment", params.client_reference)
        reply = await self.fake.create(
            "refund_payment", account, key, params, rule, lambda: refund_payment(self.fake, account, key, params, rule)
        )
        return reply, rule

    async def get_payment_method(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """Extension: whether a payment method is still usable (payment_methods.py)."""
        rule = self.fake.faults.match("get_payment_method", None)
        method = request.path_params["id"]
        return await self.fake.read(rule, lambda: Reply.ok(describe_method(self.fake, method))), rule

    def one_of(self, operation: str, objects: Mapping[str, ProviderObject]) -> Handler:
        """`GET /v1/<objects>/{id}`: 404 for unknown, other accounts' and hidden objects."""

        async def get(request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
            obj = objects.get(request.path_params["id"])
            found = obj if obj is not None and obj.account == account.id else None
            rule = self.fake.faults.match(operation, found.client_reference if found else None)

            def produce() -> Reply:
                if found is None or not self.fake.can_see(found, rule):
                    raise NotFound()
                return Reply.ok(found.public())

            return await self.fake.read(rule, produce), rule

        return get

    def list_of(self, operation: str, kind: str) -> Handler:
        """`GET /v1/<objects>?client_reference=...` -> `{"data": [...]}`, visible objects only; or
        (extension) with `created_gte` and `created_lt` instead, a page of the objects created in
        that window (provider_fake.listing)."""

        async def list_(request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
            query = dict(request.query_params)
            reference = query.get("client_reference")
            if not reference and "created_gte" in query and "created_lt" in query:
                return await self._window(operation, kind, account, query)
            if not reference:
                raise InvalidRequest("the client_reference query parameter (or created_gte and created_lt) is required")
            rule = self.fake.faults.match(operation, reference)

            def produce() -> Reply:
                data = [
                    obj.public()
                    for obj in self.fake.store.by_reference(kind, account.id, reference)
                    if self.fake.can_see(obj, rule)
                ]
                return Reply.ok({"data": data})

            return await self.fake.read(rule, produce), rule

        return list_

    async def _window(self, operation: str, kind: str, account: Account,
                      query: dict[str, str]) -> tuple[Reply, FaultRule | None]:
        rule = self.fake.faults.match(operation, None)

        def produce() -> Reply:
            mine = (obj for obj in self.fake.store.of_kind(kind) if obj.account == account.id)
            return Reply.ok(window_page(mine, query, lambda obj: self.fake.can_see(obj, rule)))

        return await self.fake.read(rule, produce), rule
