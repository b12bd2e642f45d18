"""Stripe's error answers: `{"error": {"type", "code"?, "message", "param"?, ...}}`.

docs/rehearsing-incidents.md "Stripe dialect" (extension): the body and HTTP status Stripe's API
reference gives for each kind of error (400 `invalid_request_error`, 400 `idempotency_error`,
401, 402 `card_error`, 404 `resource_missing`, 429 `rate_limit` with `Retry-After` (unless the
rule leaves it out) and, when the rule says, `Stripe-Should-Retry`, 500
`api_error`). The fake's shared machinery raises CardCo's errors (a key reused with other
parameters, a rate-limit rule, a 500 rule, an unknown object); `stripe_reply` answers each in
Stripe's shape, so one fault rule means the same thing on both mounts.
"""

from __future__ import annotations

from typing import Any

from provider_fake.errors import (
    IdempotencyKeyInUse,
    InternalError,
    InvalidRequest,
    KeyInFlight,
    NotFound,
    ProviderError,
    RateLimited,
    Unauthorized,
)
from provider_fake.replies import Reply, encode

DOCS = "https://stripe.com/docs/error-codes/"


class StripeError(ProviderError):
    """An error in Stripe's shape: HTTP status, `type`, optional `code` and `param`, and any
    further fields of the error object (`decline_code`, `payment_intent`, ...)."""

    def __init__(
        self,
        http_status: int,
        type_: str,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.type = type_
        self.stripe_code = code
        self.param = param
        self.response_headers = headers or {}
        self.fields = extra

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {}
        if self.stripe_code is not None:
            error["code"] = self.stripe_code
            error["doc_url"] = DOCS + self.stripe_code.replace("_", "-")
        error["message"] = self.message
        if self.param is not None:
            error["param"] = self.param
        error["type"] = self.type
        return {"error": error | self.fields}

    def headers(self) -> dict[str, str]:
        return dict(self.response_headers)


def invalid_request(message: str, *, code: str | None = None, param: str | None = None, **extra: Any) -> StripeError:
    """400 `invalid_request_error`: nothing was done."""
    return StripeError(400, "invalid_request_error", message, code=code, param=param, **extra)


def no_such(kind: str, object_id: str, param: str, status: int = 404) -> StripeError:
    """`resource_missing`: 404 for the object a path names, 400 for one a parameter names."""
    return StripeError(
        status, "invalid_request_error", f"No such {kind}: '{object_id}'", code="resource_missing", param=param
    )


def unexpected_state(message: str) -> StripeError:
    """400 `payment_intent_unexpected_state`: the object's status does not allow the request."""
    return invalid_request(message, code="payment_intent_unexpected_state")


def _translate(error: ProviderError) -> StripeError:
    """The Stripe error for one of the shared machinery's CardCo errors."""
    if isinstance(error, StripeError):
        return error
    if isinstance(error, KeyInFlight):
        # Stripe's idempotency guide: a request that "conflicts with another that's executing
        # concurrently" saves no result; it is safe to retry.
        return StripeError(
            409,
            "idempotency_error",
            "There is currently another in-progress request using this idempotency key (that also used "
            "this API key). Try again later.",
            code="idempotency_key_in_use",
            headers={"Stripe-Should-Retry": "true"},
        )
    if isinstance(error, RateLimited):
        advice = {} if error.should_retry is None else {"Stripe-Should-Retry": str(error.should_retry).lower()}
        return StripeError(
            400 if error.legacy_400 else 429,
            "invalid_request_error",
            "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.",
            code="rate_limit",
            headers=error.headers() | advice,
        )
    if isinstance(error, IdempotencyKeyInUse):
        return StripeError(
            400,
            "idempotency_error",
            "Keys for idempotent requests can only be used with the same parameters they were first used with. "
            "Try using a key other than the one you used if you meant to execute a different request.",
        )
    if isinstance(error, Unauthorized):
        return StripeError(401, "invalid_request_error", "Invalid API Key provided.")
    if isinstance(error, NotFound):
        return StripeError(404, "invalid_request_error", error.message, code="resource_missing")
    if isinstance(error, InvalidRequest):
        return invalid_request(error.message)
    if isinstance(error, InternalError):
        return StripeError(500, "api_error", "An unknown error occurred")
    return StripeError(error.status, "api_error", error.message)


def stripe_reply(error: ProviderError, status: int | None = None) -> Reply:
    """The Stripe mount's `ErrorReply`: any error of the fake, answered in Stripe's shape."""
    stripe = _translate(error)
    return Reply(status or stripe.http_status, encode(stripe.body()), stripe.headers())
