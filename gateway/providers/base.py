"""The provider-adapter seam (docs/decisions/0046): everything that differs between two
payment providers, stated once, so that nothing above ``gateway.providers`` names a provider.

Everything that makes paygate safe (record before send, Unknown, lookups before a resend,
verified and deduplicated notifications, reconciliation) is provider-independent and stays above
the seam. A :class:`Provider` states the rest:

- one contract per attempt kind it supports, in :attr:`Provider.operations` by the kind's name:
  for each pipeline kind an :class:`Operation` (``payout``, ``payout_recall``, ``payment_refund``):
  the exact request of a send, the business fields its seed 001 manifest commits to, the lookup
  the reconciler makes, and the versioned classification table (seed 000, "Production
  Adaptation"); for checkout (``payment``) a :class:`PaymentOperation`: the stored body built once
  at insert and sent byte for byte on every send, its fields, the create's answer as
  :class:`~gateway.domain.attempts.Evidence`, the lookup and the payment-method check. A new kind
  is one more entry per provider, never a new method of the protocol;
- the transport: the headers a send carries on the account stored on the attempt (credential,
  account, pinned API version, content type); the attempt's key goes as ``Idempotency-Key``;
- answers that every kind shares: a rate limit, ``Retry-After``, whether a create may be sent again;
- notifications: signature verification against the endpoint's accounts and parsing into the
  common :class:`~gateway.domain.provider_evidence.Notification` (its event id is the dedup key;
  the synthesized-key rule applies where the provider has none);
- its timings (:class:`ProviderTimings`): key window, lookup visibility delay, whether it enforces
  a request's expiry, and its documented lookup rate limit.

The adapter of an account is chosen by the provider prefix of the account id (``cardco:`` or
``stripe:``) in ``gateway.providers.registry``; the I/O with it is :class:`gateway.providers.calls.ProviderCalls`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gateway.domain.attempt_kinds import PAYMENT
from gateway.domain.attempts import Evidence
from gateway.domain.outcomes import StatusTable
from gateway.domain.provider_evidence import Lookup, Notification, Unreadable
from gateway.domain.provider_listing import Page, PageRequest
from gateway.domain.provider_listing import Unreadable as ListingUnreadable
from gateway.domain.webhook_verdicts import Rejected, Verified
from gateway.settings import ProviderAccount

if TYPE_CHECKING:
    from gateway.providers.calls import ProviderCalls

Row = dict[str, Any]


class UnsupportedOperation(Exception):
    """The provider has no operation for this attempt kind (e.g. a recall on Stripe, docs/decisions/0047)."""


def destination_digest(pepper: str, token: str) -> str:
    """What evidence may hold about a destination token: its HMAC under the server's pepper."""
    return hmac.new(pepper.encode(), token.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Request:
    """One send: the path and the exact bytes, identical on every send of the attempt."""

    path: str
    body: bytes


LookupRecords = Callable[["ProviderCalls", Row], Awaitable[list[Row] | None]]


@dataclass(frozen=True)
class Operation:
    """One pipeline kind's contract with one provider.

    ``request(attempt, secret)`` is the exact request of every send; ``fields(body)`` reads such a
    body back into the business fields a manifest commits to, in common names (``client_reference``,
    ``amount_minor``, ``currency``, ``destination_token``, ``expires_at``...), raising
    ``ManifestUnbuildable`` for one it cannot read; ``lookup(calls, attempt)`` returns the records
    that may be the attempt's, in the common record shape (``id``, ``client_reference``,
    ``amount_minor``, ``currency``, ``status``, ``failure_code`` and the kind's identity field:
    ``destination_digest``, ``payout`` or ``payment``), or None when the lookup itself failed;
    ``table`` classifies answers and records."""

    table: StatusTable
    request: Callable[[Row, str | None], Request]
    fields: Callable[[bytes], dict[str, Any]]
    lookup: LookupRecords


class PaymentLookup(Protocol):
    def __call__(self, *, provider_id: str | None, client_reference: str | None,
                 account: ProviderAccount | None = None,
                 since: datetime | None = None) -> tuple[str, dict[str, str] | None]:
        """The path and query of a lookup by provider id, else by client reference (on ``account``,
        for a payment created no earlier than ``since``, when the account looks payments up by
        listing them)."""
        ...


class LookupReader(Protocol):
    def __call__(self, status_code: int, body: bytes, retry_after: str | None, *, listing: bool,
                 client_reference: str | None = None) -> Lookup:
        """Classify a lookup's answer ("failed", never "not found", when the lookup itself failed;
        ``listing``: it was by client reference, ``client_reference``)."""
        ...


@dataclass(frozen=True)
class PaymentOperation:
    """The checkout kind's contract with one provider (seed 004), as a pipeline kind's is an
    :class:`Operation`: what checkout's sends, lookups and resend conditions need of it.

    ``path`` is the create's (``POST`` on the account's base URL, :meth:`endpoint`);
    ``body(amount_minor=, currency=, payment_method=, client_reference=)`` the exact body every send
    of an attempt carries, built once at insert and stored; ``fields(body)`` reads it back into the
    business fields a manifest commits to, in common names (``ManifestUnbuildable`` if unreadable);
    ``payment_method(body)`` the payment method it names, or None (then it is never resent);
    ``evidence(account_id, status, body)`` classifies a create's answer; ``lookup`` and
    ``lookup_result`` are the lookup (:class:`PaymentLookup`, :class:`LookupReader`); ``method_path``
    and ``method_usable(status, body, now)`` are the payment-method check (None: the check failed);
    ``client_secret(status, body)`` reads the secret a provider's browser SDK completes a customer
    action with out of a lookup by id (None: the provider has none, as CardCo)."""

    path: str
    body: Callable[..., str]
    fields: Callable[[str], dict[str, Any]]
    payment_method: Callable[[str], str | None]
    evidence: Callable[[str, int, bytes], Evidence]
    lookup: PaymentLookup
    lookup_result: LookupReader
    method_path: Callable[[str], str]
    method_usable: Callable[[int, bytes, datetime], bool | None]
    client_secret: Callable[[int, bytes], str | None] = lambda status_code, body: None

    def endpoint(self, account: ProviderAccount) -> str:
        """The create's URL on ``account``."""
        return account.base_url.rstrip("/") + self.path


@dataclass(frozen=True)
class ProviderTimings:
    """What the provider documents about time ("the timings that belong to the provider").

    ``key_window_s``: how long it keeps an idempotency key's saved result; an account's
    ``key_window_s`` may not exceed it. ``visibility_delay_s``: how long a new object may stay
    invisible to a lookup by client reference; a lookup that finds nothing inside it proves
    nothing. ``request_expiry_enforced``: whether it rejects a request received after the
    ``expires_at`` the request carries; only then can "not found" after that expiry close an
    attempt as NotApplied (seed 000, "Reconcile Before Any New Attempt"). ``lookups_per_s``: its
    documented read rate limit per account (0: none documented)."""

    key_window_s: float
    visibility_delay_s: float
    request_expiry_enforced: bool
    lookups_per_s: float = 0.0


class Provider(Protocol):
    """One provider's adapter; see the module docstring. The same shape for every attempt kind: a
    kind's own needs are its contract in :attr:`operations`, never a method here."""

    name: str
    timings: ProviderTimings

    @property
    def operations(self) -> Mapping[str, Operation | PaymentOperation]:
        """Every attempt kind's contract with the provider, by the registered kind's name
        (gateway.domain.attempt_kinds); a kind it lacks is absent (:func:`contract` raises)."""
        ...

    def account_problem(self, account: ProviderAccount) -> str | None:
        """Why the provider cannot serve ``account`` as configured (its pinned API version above
        all), or None; start-up refuses an account with a problem (gateway.providers.registry)."""
        ...

    def headers(self, account: ProviderAccount, credential: str) -> dict[str, str]:
        """What every call on ``account`` carries besides the idempotency key (a send's body
        content type included)."""
        ...

    def rate_limited(self, status_code: int, body: bytes) -> bool:
        """Whether a read's answer is a rate limit (a 429; Stripe's legacy 400 ``rate_limit`` too)."""
        ...

    def retry_after_s(self, headers: Mapping[str, str]) -> float | None:
        """The wait an answer asks for, in seconds, when the provider documents its ``Retry-After``;
        None otherwise (the resend backoff and the lookup pause then use paygate's own steps)."""
        ...

    def resend_allowed(self, headers: Mapping[str, str]) -> bool:
        """False when a create's answer says not to send the request again (docs/decisions/0059)."""
        ...

    # Listing by creation time (a provider-side reconciliation; gateway.domain.provider_listing).
    listed_kinds: tuple[str, ...]

    def list_request(self, kind: str, start: datetime, end: datetime, cursor: str | None) -> PageRequest:
        """The page of ``kind`` (one of :attr:`listed_kinds`) created in [start, end) after ``cursor``."""
        ...

    def list_page(self, kind: str, status_code: int, body: bytes) -> Page | ListingUnreadable:
        """Read the answer to :meth:`list_request`."""
        ...

    # Notifications (seed 004, "The Notification Handler").
    def verifier(self, account: ProviderAccount) -> Any:
        """The account's verification material, decoded once from its configuration."""
        ...

    def verify(self, headers: Mapping[str, str], body: bytes, keys: Sequence[Any],
               now: datetime) -> Verified | Rejected:
        """Which of the accounts (their :meth:`verifier` material) signed the delivery, or why not."""
        ...

    def parse(self, body: bytes) -> Notification | Unreadable:
        """A verified body as common evidence, or why it cannot be read."""
        ...


Contract = TypeVar("Contract", Operation, PaymentOperation)


def contract(provider: Provider, kind: str, shape: type[Contract]) -> Contract:
    """The contract of the attempt kind called ``kind`` with ``provider``, of the ``shape`` that
    kind has (:class:`Operation` for a pipeline kind, :class:`PaymentOperation` for checkout);
    raises :class:`UnsupportedOperation` where the provider has none (docs/decisions/0047)."""
    found = provider.operations.get(kind)
    if not isinstance(found, shape):
        raise UnsupportedOperation(f"{provider.name} has no {kind} operation")
    return found


def checkout(provider: Provider) -> PaymentOperation:
    """The checkout kind's contract with ``provider``."""
    return contract(provider, PAYMENT.name, PaymentOperation)
