"""Payments: create, refund (extension; docs/decisions/0021, docs/rehearsing-incidents.md).

API.md "provider_fake: CardCo" and "Precise details": `pm_card_visa` succeeds,
`pm_card_declined` is declined (402 `card_declined`, a decision: no money moved),
`pm_card_3ds` answers `requires_action` with an expiring `next_action`; an expired method
(`pm_card_expired`, or one expired through the control API) is declined with `failure_code`
`expired_card`, whatever a rule says; any other `pm_...` succeeds; anything else is a 400
`invalid_request`. Fault rules `decline`, `requires_action`
and `processing` override the payment method's outcome. A declined payment is still an
object: lookups find it, `payment.failed` is sent and the ledger lists it as `failed`
(docs/decisions/0002-cardco-fault-semantics.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, field_validator

from provider_fake.errors import CardDeclined, InvalidRequest, NotFound, RequestExpired
from provider_fake.faults import FaultRule
from provider_fake.objects import Payment, Refund, new_id
from provider_fake.payment_methods import EXPIRED_CODE, expired_at
from provider_fake.replies import Reply

if TYPE_CHECKING:
    from provider_fake.config import Account
    from provider_fake.fake import CardCo

METHOD_OUTCOMES = {"pm_card_declined": "decline", "pm_card_3ds": "requires_action"}
OUTCOME_ACTIONS = frozenset({"decline", "requires_action", "processing"})

AmountMinor = Annotated[StrictInt, Field(gt=0)]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
ClientReference = Annotated[str, Field(min_length=1, max_length=200)]


class PaymentRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    amount_minor: AmountMinor
    currency: Currency
    payment_method: str
    client_reference: ClientReference

    @field_validator("payment_method")
    @classmethod
    def _is_a_payment_method(cls, value: str) -> str:
        if not value.startswith("pm_"):
            raise ValueError("payment_method must be a pm_... value")
        return value


class RefundRequest(BaseModel):
    """`POST /v1/payments/{id}/refunds` (extension; docs/decisions/0021): the refund's own
    reference and the time after which CardCo must not act on it (as for payouts and recalls)."""

    model_config = ConfigDict(extra="ignore")

    client_reference: ClientReference
    expires_at: AwareDatetime


class RefundParams(RefundRequest):
    """What the key's fingerprint covers: the body and the payment it refunds."""

    payment_id: str


def check_expiry(fake: CardCo, expires_at: datetime) -> datetime:
    """Now, unless the request arrived after `expires_at` plus the skew: 400 `request_expired`."""
    now = fake.clock.now()
    if now > expires_at + timedelta(seconds=fake.config.request_expiry_skew_s):
        raise RequestExpired()
    return now


def create_payment(
    fake: CardCo, account: Account, key: str, params: PaymentRequest, rule: FaultRule | None, base_url: str
) -> Reply:
    """The effect of `POST /v1/payments`: a new payment in the outcome its method or rule says."""
    now = fake.clock.now()
    payment = Payment.taken(
        account=account.id, idempotency_key=key, request=params, now=now, status="succeeded"
    )
    outcome = METHOD_OUTCOMES.get(params.payment_method, "succeeded")
    if rule is not None and rule.action in OUTCOME_ACTIONS:
        outcome = rule.action
    expired = expired_at(fake, params.payment_method) is not None
    if expired:
        outcome = "decline"
    if outcome == "decline":
        payment.status = "failed"
        payment.failure_code = EXPIRED_CODE if expired else (rule.code if rule else None) or "card_declined"
    elif outcome == "requires_action":
        expires_in_s = (rule.expires_in_s if rule else None) or fake.config.requires_action_expires_in_s
        payment.require_action(f"{base_url}/_control/payments/{payment.id}/authenticate", now, expires_in_s)
    elif outcome == "processing":
        fake.start_processing(payment, rule, "succeeded", "card_declined")
    fake.record(payment, rule)
    if payment.status == "failed":
        return Reply.error(CardDeclined(payment=payment.public()))
    return Reply.ok(payment.public())


def refund_payment(fake: CardCo, account: Account, key: str, params: RefundParams, rule: FaultRule | None) -> Reply:
    """The effect of `POST /v1/payments/{id}/refunds` (extension), after the expiry check: a refund
    object of the payment's full amount, `succeeded` at once (or `processing` under a rule). A
    documented no-effect answers 200 `failed`: `already_refunded` when the payment is refunded or
    another refund of it is processing, `payment_not_refundable` when it did not succeed, or a
    `decline` rule's code. The payment becomes `refunded` only when the refund succeeds. The
    payment is read by id as a write reads it, consistently: the visibility delay lags lookups, not
    writes (a recall finds its payout the same way)."""
    now = check_expiry(fake, params.expires_at)
    payment = fake.store.payments.get(params.payment_id)
    if payment is None or payment.account != account.id:
        raise NotFound()
    refund = Refund(id=new_id(Refund.id_prefix), account=account.id, client_reference=params.client_reference,
                    idempotency_key=key, amount_minor=payment.amount_minor, currency=payment.currency,
                    status="failed", created_at=now, payment=payment.id, expires_at=params.expires_at)
    live = [r for r in fake.store.refunds.values() if r.payment == payment.id and r.status == "processing"]
    refused = None
    if rule is not None and rule.action == "decline":
        refused = rule.code or "payment_not_refundable"
    elif payment.status == "refunded" or live:
        refused = "already_refunded"
    elif payment.status != "succeeded":
        refused = "payment_not_refundable"
    return take_refund(fake, refund, rule, refused, "refund_rejected")


def take_refund(fake: CardCo, refund: Refund, rule: FaultRule | None, refused: str | None, failure_code: str) -> Reply:
    """A new refund object's outcome, recorded: `failed` with `refused` if set, else `processing`
    under a `processing` rule (then `failure_code` if it fails), else `succeeded` at once."""
    if refused is not None:
        refund.status, refund.failure_code = "failed", refused
    elif rule is not None and rule.action == "processing":
        fake.start_processing(refund, rule, "succeeded", failure_code)
    else:
        refund.status = "succeeded"
    fake.record(refund, rule)
    return Reply.ok(refund.public())


def authenticate_payment(fake: CardCo, payment: Payment, succeeded: bool) -> None:
    """The customer completes (or fails) 3-D Secure: `requires_action` -> succeeded/failed."""
    if payment.status != "requires_action":
        raise InvalidRequest(f"payment is {payment.status}, not requires_action")
    payment.change("succeeded" if succeeded else "failed", None if succeeded else "authentication_failed")
    fake.announce(payment)
