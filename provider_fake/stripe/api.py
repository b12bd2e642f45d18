"""The Stripe dialect's API, `/stripe/v1/...` (extension; docs/rehearsing-incidents.md "Stripe
dialect", docs/decisions/0044).

Point a Stripe client's API base at `<fake>/stripe`. Every request is logged for
`GET /_control/requests` and applies due scheduled changes first, like CardCo's mount; then:
- authentication by the secret key alone (`Authorization: Bearer sk_...`, or Basic with the key
  as user name), 401 otherwise: the key names the account; with `Stripe-Account: acct_...` (Stripe
  Connect) the request acts for that connected account: its own objects, idempotency keys, lists
  and searches, and its events carry `account` (403 for a header that names no account);
- `Stripe-Version` accepted (a malformed one is a 400) and echoed, the account's `api_version`
  when the request sends none; every answer carries a `Request-Id`;
- POSTs are idempotent by the optional `Idempotency-Key` (scope: the account; 24 h, the shared
  `idempotency_retention_s`): a replay answers the saved status and body with
  `Idempotent-Replayed: true`, the key with other parameters or on another endpoint is 400
  `idempotency_error`, and an answer is saved only once the endpoint ran (not for a 400 on the
  parameters, nor for a 429 or a 500 `before_effect` rule);
- fault rules are the shared ones, by the shared operation names (create_payment, get_payment,
  list_payments for the search, refund_payment, get_refund, list_refunds, create_payout,
  get_payout, list_payouts, get_payment_method) plus cancel_payment, capture_payment and
  cancel_payout; a rule's `client_reference` is `metadata[client_reference]`.

Retrieving by id and listing are consistent reads (Stripe's list and retrieve APIs are); search
lags: objects younger than `visibility_delay_s` (or a create's or search's `not_found_for_s`) are
not found by it, and the others are shown (and matched) as they were `visibility_delay_s` ago.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Annotated, Literal, TypeVar

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from provider_fake.api import bearer, note_fault, received
from provider_fake.config import Account
from provider_fake.errors import ProviderError
from provider_fake.fake import CardCo
from provider_fake.faults import FaultRule
from provider_fake.objects import ProviderObject, new_id
from provider_fake.payment_methods import expired_at
from provider_fake.replies import Reply, render
from provider_fake.stripe import payments, payouts
from provider_fake.stripe.errors import StripeError, invalid_request, no_such, stripe_reply
from provider_fake.stripe.forms import decode, validated
from provider_fake.stripe.methods import payment_method_object
from provider_fake.stripe.objects import STRIPE_NAMES, PaymentIntent, StripePayout, StripeRefund
from provider_fake.stripe.payments import StripeParams
from provider_fake.stripe.search import parse

PREFIX = "/stripe"
API_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}(\.[a-z_]+)?")
CONNECTED_ACCOUNT = re.compile(r"acct_[A-Za-z0-9]+")

Params = TypeVar("Params", bound=StripeParams)
Found = TypeVar("Found", bound=ProviderObject)
Handler = Callable[[Request, Account, bytes], Awaitable[tuple[Reply, FaultRule | None]]]
Limit = Annotated[int, Field(ge=1, le=100)]
Created = int | dict[Literal["gt", "gte", "lt", "lte"], int] | None
RANGE = {"gt": int.__gt__, "gte": int.__ge__, "lt": int.__lt__, "lte": int.__le__}


class SearchParams(StripeParams):
    query: str
    limit: Limit = 10
    page: str | None = None


class ListParams(StripeParams):
    limit: Limit = 10
    starting_after: str | None = None
    ending_before: str | None = None
    created: Created = None


class RefundListParams(ListParams):
    payment_intent: str | None = None
    charge: str | None = None


class PayoutListParams(ListParams):
    status: str | None = None
    destination: str | None = None
    arrival_date: Created = None


def api_key(request: Request) -> str | None:
    """The secret key: a bearer token, or the user name of Basic credentials (`-u sk_...:`)."""
    token = bearer(request)
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if token is not None or scheme.lower() != "basic":
        return token
    try:
        return base64.b64decode(credentials, validate=True).decode().partition(":")[0] or None
    except (binascii.Error, UnicodeDecodeError):
        return None


def idempotency_key(request: Request) -> str | None:
    """The optional `Idempotency-Key`: at most 255 characters."""
    key = request.headers.get("idempotency-key")
    if key is not None and not 0 < len(key) <= 255:
        raise invalid_request("Idempotency-Key must be 1 to 255 characters long.")
    return key


def in_range(value: int, bounds: Created) -> bool:
    """Stripe's `created=<n>` or `created[gte]=<n>`-style filters."""
    if bounds is None:
        return True
    if isinstance(bounds, int):
        return value == bounds
    return all(RANGE[name](value, bound) for name, bound in bounds.items())


class StripeApi:
    def __init__(self, fake: CardCo) -> None:
        self.fake = fake

    def routes(self) -> list[Route]:
        store = self.fake.store

        def route(path: str, handler: Handler, method: str) -> Route:
            return Route(f"{PREFIX}/v1{path}", self._endpoint(handler), methods=[method])

        return [
            route("/payment_intents", self.create_payment_intent, "POST"),
            route("/payment_intents", self.list_payment_intents, "GET"),
            route("/payment_intents/search", self.search_payment_intents, "GET"),
            route("/payment_intents/{id}", self.one_of("get_payment", store.payments, PaymentIntent), "GET"),
            route("/payment_intents/{id}/cancel", self.cancel_payment_intent, "POST"),
            route("/payment_intents/{id}/capture", self.capture_payment_intent, "POST"),
            route("/refunds", self.create_refund, "POST"),
            route("/refunds", self.list_refunds, "GET"),
            route("/refunds/{id}", self.one_of("get_refund", store.refunds, StripeRefund), "GET"),
            route("/payouts", self.create_payout, "POST"),
            route("/payouts", self.list_payouts, "GET"),
            route("/payouts/{id}", self.one_of("get_payout", store.payouts, StripePayout), "GET"),
            route("/payouts/{id}/cancel", self.cancel_payout, "POST"),
            route("/payment_methods/{id}", self.get_payment_method, "GET"),
        ]

    def authenticate(self, request: Request) -> Account:
        key = api_key(request)
        if key is None:
            raise StripeError(401, "invalid_request_error",
                              "You did not provide an API key. You need to provide your API key in the "
                              "Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').")
        account = self.fake.config.account_with_key("stripe", key)
        if account is None:
            raise StripeError(401, "invalid_request_error", f"Invalid API Key provided: {key[:8]}****{key[-4:]}")
        connected = request.headers.get("stripe-account")
        if connected is None:
            return account
        if not CONNECTED_ACCOUNT.fullmatch(connected):
            raise StripeError(403, "invalid_request_error",
                              f"The provided key '{key[:8]}****{key[-4:]}' does not have access to account "
                              f"'{connected}' (or that account does not exist). Application access may have been "
                              "revoked.")
        return account.connected_as(connected)

    def _endpoint(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Log, settle, authenticate, check the version, handle; render with Stripe's headers."""

        async def endpoint(request: Request) -> Response:
            body = await request.body()
            record = await received(self.fake, request, body)
            headers = {"Request-Id": new_id("req")}
            rule: FaultRule | None = None
            try:
                account = self.authenticate(request)
                version = request.headers.get("stripe-version") or account.api_version
                if not API_VERSION.fullmatch(version):
                    raise invalid_request(f"Invalid Stripe API version: {version}")
                headers["Stripe-Version"] = version
                reply, rule = await handler(request, account, body)
            except ProviderError as error:
                reply = stripe_reply(error)
            note_fault(record, rule)
            key = request.headers.get("idempotency-key")
            if key and request.method == "POST":
                headers["Idempotency-Key"] = key
            if reply.replayed:
                headers["Idempotent-Replayed"] = "true"
            return await render(reply, rule, headers)

        return endpoint

    async def _create(
        self,
        request: Request,
        account: Account,
        operation: str,
        params: Params,
        reference: str | None,
        effect: Callable[[str | None, Params, FaultRule | None], Reply],
    ) -> tuple[Reply, FaultRule | None]:
        """An idempotent POST under the rule for `reference` (the object's client reference)."""
        key = idempotency_key(request)
        rule = self.fake.faults.match(operation, reference)
        reply = await self.fake.create(
            operation, account, key, params, rule, lambda: effect(key, params, rule), errors=stripe_reply
        )
        return reply, rule

    def _reference_of(self, objects: Mapping[str, ProviderObject], request: Request) -> str | None:
        obj = objects.get(request.path_params["id"])
        return obj.client_reference if obj is not None else None

    async def create_payment_intent(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        base_url = str(request.base_url).rstrip("/")
        params = validated(payments.PaymentIntentParams, decode(body))
        return await self._create(
            request, account, "create_payment", params, params.client_reference,
            lambda key, p, rule: payments.create_payment_intent(self.fake, account, key, p, rule, base_url),
        )

    async def cancel_payment_intent(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        params = validated(payments.CancelParams, decode(body) | {"intent": request.path_params["id"]})
        return await self._create(
            request, account, "cancel_payment", params, self._reference_of(self.fake.store.payments, request),
            lambda key, p, rule: payments.cancel_payment_intent(self.fake, account, p),
        )

    async def capture_payment_intent(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        params = validated(payments.CaptureParams, decode(body) | {"intent": request.path_params["id"]})
        return await self._create(
            request, account, "capture_payment", params, self._reference_of(self.fake.store.payments, request),
            lambda key, p, rule: payments.capture_payment_intent(self.fake, account, p),
        )

    async def create_refund(self, request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
        params = validated(payments.RefundParams, decode(body))
        return await self._create(
            request, account, "refund_payment", params, params.client_reference,
            lambda key, p, rule: payments.create_refund(self.fake, account, key, p, rule),
        )

    async def create_payout(self, request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
        params = validated(payouts.PayoutParams, decode(body))
        return await self._create(
            request, account, "create_payout", params, params.client_reference,
            lambda key, p, rule: payouts.create_payout(self.fake, account, key, p, rule),
        )

    async def cancel_payout(self, request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
        params = validated(payouts.PayoutCancelParams, decode(body) | {"payout": request.path_params["id"]})
        return await self._create(
            request, account, "cancel_payout", params, self._reference_of(self.fake.store.payouts, request),
            lambda key, p, rule: payouts.cancel_payout(self.fake, account, p),
        )

    def one_of(self, operation: str, objects: Mapping[str, ProviderObject], kind: type[ProviderObject]) -> Handler:
        """`GET /v1/<objects>/{id}`: a consistent read; 404 `resource_missing` for unknown and
        other accounts' objects, and under a lookup rule's `not_found_for_s`."""

        async def get(request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
            object_id = request.path_params["id"]
            obj = objects.get(object_id)
            rule = self.fake.faults.match(operation, obj.client_reference if obj else None)

            def produce() -> Reply:
                found = payments.owned(objects, kind, account, object_id)
                if not self.fake.can_see(found, rule, consistent=True):
                    raise no_such(STRIPE_NAMES[kind][0], object_id, STRIPE_NAMES[kind][1])
                return Reply.ok(found.public())

            return await self.fake.read(rule, produce, stripe_reply), rule

        return get

    async def search_payment_intents(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """`GET /v1/payment_intents/search`: newest first, `limit` a page, `next_page` the cursor;
        objects the search index has not caught up with are left out."""
        params = validated(SearchParams, decode(request.url.query))
        query = parse(params.query)
        reference = query.metadata_value("client_reference")
        rule = self.fake.faults.match("list_payments", reference)
        offset = int(params.page.removeprefix("page_")) if params.page and params.page[5:].isdigit() else 0

        def produce() -> Reply:
            store = self.fake.store
            as_of = self.fake.clock.now() - timedelta(seconds=self.fake.config.visibility_delay_s)
            candidates = (store.by_reference(PaymentIntent.kind, account.id, reference) if reference is not None
                          else list(store.payments.values()))
            shown = [
                obj.indexed(as_of) for obj in reversed(candidates)
                if isinstance(obj, PaymentIntent) and obj.account == account.id and self.fake.can_see(obj, rule)
            ]
            found = [document for document in shown if document is not None and query.matches(document)]
            end = offset + params.limit
            return Reply.ok({
                "object": "search_result",
                "data": found[offset:end],
                "has_more": end < len(found),
                "next_page": f"page_{end}" if end < len(found) else None,
                "url": "/v1/payment_intents/search",
            })

        return await self.fake.read(rule, produce, stripe_reply), rule

    async def list_payment_intents(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """`GET /v1/payment_intents`: Stripe's list (consistent, unlike the search)."""
        params = validated(ListParams, decode(request.url.query))
        return await self._list(account, "list_payments", "/v1/payment_intents", params, self.fake.store.payments,
                                PaymentIntent, lambda intent: True)

    async def list_refunds(self, request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
        """`GET /v1/refunds`, optionally of one `payment_intent` or `charge`."""
        params = validated(RefundListParams, decode(request.url.query))

        def wanted(refund: StripeRefund) -> bool:
            return (params.payment_intent in (None, refund.payment) and params.charge in (None, refund.charge))

        return await self._list(account, "list_refunds", "/v1/refunds", params, self.fake.store.refunds,
                                StripeRefund, wanted)

    async def list_payouts(self, request: Request, account: Account, body: bytes) -> tuple[Reply, FaultRule | None]:
        """`GET /v1/payouts`, optionally by `status`, `destination`, `arrival_date`."""
        params = validated(PayoutListParams, decode(request.url.query))

        def wanted(payout: StripePayout) -> bool:
            document = payout.public()
            return (params.status in (None, document["status"])
                    and params.destination in (None, document["destination"])
                    and in_range(document["arrival_date"], params.arrival_date))

        return await self._list(account, "list_payouts", "/v1/payouts", params, self.fake.store.payouts,
                                StripePayout, wanted)

    async def _list(
        self,
        account: Account,
        operation: str,
        url: str,
        params: ListParams,
        objects: Mapping[str, ProviderObject],
        kind: type[Found],
        wanted: Callable[[Found], bool],
    ) -> tuple[Reply, FaultRule | None]:
        """A Stripe list: newest first, `limit` and `starting_after`/`ending_before` cursors, the
        `created` filter; a consistent read (a rule's `not_found_for_s` still applies)."""
        rule = self.fake.faults.match(operation, None)

        def produce() -> Reply:
            mine = [
                obj for obj in reversed(list(objects.values()))
                if isinstance(obj, kind) and obj.account == account.id and self.fake.can_see(obj, rule, consistent=True)
                and in_range(int(obj.created_at.timestamp()), params.created) and wanted(obj)
            ]
            ids = [obj.id for obj in mine]
            start, end = 0, len(mine)
            if params.starting_after is not None:
                start = ids.index(params.starting_after) + 1 if params.starting_after in ids else len(ids)
            if params.ending_before is not None:
                end = ids.index(params.ending_before) if params.ending_before in ids else 0
                start = max(start, end - params.limit)
            page = mine[start:min(end, start + params.limit)]
            more = start + params.limit < end
            return Reply.ok({"object": "list", "data": [obj.public() for obj in page], "has_more": more, "url": url})

        return await self.fake.read(rule, produce, stripe_reply), rule

    async def get_payment_method(
        self, request: Request, account: Account, body: bytes
    ) -> tuple[Reply, FaultRule | None]:
        """`GET /v1/payment_methods/{id}`: a test card; one expired through the control API (or
        `pm_card_expired`) has an expiry month in the past."""
        rule = self.fake.faults.match("get_payment_method", None)
        method = request.path_params["id"]

        def produce() -> Reply:
            if not method.startswith("pm_"):
                raise no_such("payment_method", method, "payment_method")
            return Reply.ok(payment_method_object(method, self.fake.clock.now(), expired_at(self.fake, method)))

        return await self.fake.read(rule, produce, stripe_reply), rule

