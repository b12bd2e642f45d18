"""CardCo's error answers.

API.md "provider_fake: CardCo": errors are `{"error": {"code", "message"}}` with the status
codes listed there. Each class's docstring is its default message.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ProviderError(Exception):
    """CardCo could not process the request."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or (self.__doc__ or "").strip()
        self.extra = extra
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}

    def headers(self) -> dict[str, str]:
        return {}


class InternalError(ProviderError):
    """CardCo had an internal error; the outcome of the request is not known to the caller."""


class Unauthorized(ProviderError):
    """The API key is missing, unknown, or does not belong to the CardCo-Account."""

    status = 401
    code = "unauthorized"


class InvalidRequest(ProviderError):
    """The request is invalid; nothing was done."""

    status = 400
    code = "invalid_request"


class RequestExpired(ProviderError):
    """The request arrived after its expires_at plus the allowed skew; nothing was done."""

    status = 400
    code = "request_expired"


class CardDeclined(ProviderError):
    """The card was declined; no money moved."""

    status = 402
    code = "card_declined"


class NotFound(ProviderError):
    """No such object."""

    status = 404
    code = "not_found"


class IdempotencyKeyInUse(ProviderError):
    """This idempotency key was used with different parameters; nothing was done."""

    status = 409
    code = "idempotency_key_in_use"


class RateLimited(ProviderError):
    """Too many requests; retry after the given delay. Nothing was done."""

    status = 429
    code = "rate_limited"

    def __init__(self, retry_after_s: int | None, should_retry: bool | None = None, legacy_400: bool = False) -> None:
        super().__init__()
        self.retry_after_s = retry_after_s
        # Said only by the Stripe dialect (provider_fake/stripe/errors.py).
        self.should_retry = should_retry
        self.legacy_400 = legacy_400

    def headers(self) -> dict[str, str]:
        """`Retry-After` when the rule gives one (a fault rule may leave it out)."""
        return {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}


class KeyInFlight(ProviderError):
    """Another request under this idempotency key is still executing; this one did nothing and
    nothing was saved for it: retry it later under the same key."""

    status = 409
    code = "idempotency_key_in_use"
