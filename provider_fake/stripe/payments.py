"""PaymentIntents and Refunds: the effects of the Stripe mount's creates.

docs/rehearsing-incidents.md "Stripe dialect". `POST /v1/payment_intents` with `confirm=true`
charges the `payment_method` at once: the test method (methods.py) or a fault rule (`decline`,
`requires_action`, `processing`, as on CardCo's mount) chooses the outcome. A decline is Stripe's
402 `card_error` whose `payment_intent` is the PaymentIntent, now `requires_payment_method` with
its `last_payment_error`: the PaymentIntent exists (lookups find it, the ledger lists it `failed`)
and the 402 is saved under the key like any answer. Without `confirm` the PaymentIntent waits
(`requires_payment_method` / `requires_confirmation`): the fake has no confirm endpoint.

`POST /v1/refunds` refunds a succeeded PaymentIntent in full (CardCo's refund semantics,
docs/decisions/0021): `succeeded` at once, `pending` under a `processing` rule, `failed` under a
`decline` rule. A PaymentIntent already refunded (or with a refund pending) is 400
`charge_already_refunded`; one that has not succeeded is 400 `payment_intent_unexpected_state`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from provider_fake.faults import FaultRule
from provider_fake.objects import ProviderObject, new_id
from provider_fake.payment_methods import expired_at
from provider_fake.payments import take_refund
from provider_fake.replies import Reply
from provider_fake.stripe.errors import StripeError, invalid_request, no_such, stripe_reply, unexpected_state
from provider_fake.stripe.methods import AUTHENTICATING_METHODS, DECLINING_METHODS, payment_error
from provider_fake.stripe.objects import STRIPE_NAMES, PaymentIntent, StripeRefund

if TYPE_CHECKING:
    from provider_fake.config import Account
    from provider_fake.fake import CardCo

Found = TypeVar("Found", bound=ProviderObject)
Amount = Annotated[int, Field(gt=0)]
Currency = Annotated[str, Field(pattern=r"^[a-zA-Z]{3}$"), AfterValidator(str.lower)]
Metadata = dict[Annotated[str, Field(max_length=40)], Annotated[str, Field(max_length=500)]]
CANCELABLE = frozenset(
    {"failed", "requires_payment_method", "requires_confirmation", "requires_action", "requires_capture", "processing"}
)


class StripeParams(BaseModel):
    """Parameters Stripe knows but the fake ignores are accepted; unknown ones are 400
    `parameter_unknown`. `client_reference` is `metadata[client_reference]`."""

    model_config = ConfigDict(extra="forbid")

    metadata: Metadata = Field(default_factory=dict)
    expand: list[str] | None = None

    @property
    def client_reference(self) -> str:
        return self.metadata.get("client_reference", "")


class PaymentIntentParams(StripeParams):
    amount: Amount
    currency: Currency
    confirm: bool = False
    payment_method: str | None = None
    capture_method: Literal["automatic", "automatic_async", "manual"] = "automatic_async"
    confirmation_method: Literal["automatic", "manual"] = "automatic"
    description: str | None = None
    return_url: str | None = None
    payment_method_types: list[str] | None = None
    automatic_payment_methods: dict[str, Any] | None = None
    payment_method_options: dict[str, Any] | None = None
    customer: str | None = None
    receipt_email: str | None = None
    statement_descriptor: str | None = None
    statement_descriptor_suffix: str | None = None
    setup_future_usage: str | None = None
    off_session: str | None = None
    error_on_requires_action: bool | None = None
    use_stripe_sdk: bool | None = None


class CancelParams(StripeParams):
    intent: str
    cancellation_reason: Literal["duplicate", "fraudulent", "requested_by_customer", "abandoned"] | None = None


class CaptureParams(StripeParams):
    intent: str
    amount_to_capture: Amount | None = None


class RefundParams(StripeParams):
    payment_intent: str | None = None
    charge: str | None = None
    amount: Amount | None = None
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = None
    instructions_email: str | None = None
    origin: str | None = None


def create_payment_intent(
    fake: CardCo, account: Account, key: str | None, params: PaymentIntentParams, rule: FaultRule | None, base_url: str
) -> Reply:
    """The effect of `POST /v1/payment_intents`."""
    now = fake.clock.now()
    intent = PaymentIntent(
        id=new_id(PaymentIntent.id_prefix), account=account.id, client_reference=params.client_reference,
        idempotency_key=key or "", amount_minor=params.amount, currency=params.currency, status="succeeded",
        created_at=now, metadata=dict(params.metadata), payment_method=params.payment_method,
        livemode=account.livemode, capture_method=params.capture_method, description=params.description,
        return_url=params.return_url,
    )
    if not params.confirm:
        intent.status = "requires_confirmation" if params.payment_method else "requires_payment_method"
        fake.record(intent, rule)
        return Reply.ok(intent.public())
    method = params.payment_method
    if method is None:
        raise invalid_request("Missing required param: payment_method.", code="parameter_missing",
                              param="payment_method")
    if not method.startswith("pm_"):
        raise no_such("PaymentMethod", method, "payment_method", status=400)
    _confirm(fake, intent, method, rule, base_url)
    fake.record(intent, rule)
    if intent.status == "failed":
        return card_error(intent)
    return Reply.ok(intent.public())


def _confirm(fake: CardCo, intent: PaymentIntent, method: str, rule: FaultRule | None, base_url: str) -> None:
    """The outcome of charging `method`: its own, a rule's, or `expired_card` if it expired."""
    outcome, failure = "succeeded", DECLINING_METHODS.get(method)
    if failure is not None:
        outcome = "decline"
    elif method in AUTHENTICATING_METHODS:
        outcome = "requires_action"
    if rule is not None and rule.action in ("decline", "requires_action", "processing"):
        outcome, failure = rule.action, rule.code or "generic_decline"
    if expired_at(fake, method) is not None:
        outcome, failure = "decline", "expired_card"
    if outcome == "decline":
        intent.status, intent.failure_code = "failed", failure
    elif outcome == "requires_action":
        expires_in_s = (rule.expires_in_s if rule else None) or fake.config.requires_action_expires_in_s
        intent.require_action(f"{base_url}/_control/payments/{intent.id}/authenticate", fake.clock.now(), expires_in_s)
    elif outcome == "processing":
        fake.start_processing(intent, rule, "succeeded", "generic_decline")
    elif intent.capture_method == "manual":
        intent.status = "requires_capture"
    intent.charge_if_attempted()


def card_error(intent: PaymentIntent) -> Reply:
    """Stripe's 402 for a declined confirmation: the card error, naming the PaymentIntent."""
    error = payment_error(intent.failure_code or "generic_decline", intent.latest_charge, intent.payment_method,
                          intent.created_at)
    fields = {k: v for k, v in error.items() if k not in ("code", "doc_url", "message", "type")}
    return stripe_reply(StripeError(402, error["type"], error["message"], code=error["code"],
                                    payment_intent=intent.public(), **fields))


def owned(objects: Mapping[str, ProviderObject], kind: type[Found], account: Account, object_id: str) -> Found:
    """The account's Stripe object of `kind` (a consistent read), else 404 `resource_missing`."""
    obj = objects.get(object_id)
    if not isinstance(obj, kind) or obj.account != account.id:
        name, param = STRIPE_NAMES[kind]
        raise no_such(name, object_id, param)
    return obj


def find_intent(fake: CardCo, account: Account, intent_id: str) -> PaymentIntent:
    return owned(fake.store.payments, PaymentIntent, account, intent_id)


def cancel_payment_intent(fake: CardCo, account: Account, params: CancelParams) -> Reply:
    """The effect of `POST /v1/payment_intents/{id}/cancel`: `canceled`, `payment_intent.canceled`."""
    intent = find_intent(fake, account, params.intent)
    if intent.status not in CANCELABLE:
        raise unexpected_state(
            f"You cannot cancel this PaymentIntent because it has a status of {intent.stripe_status()}. Only a "
            "PaymentIntent with one of the following statuses may be canceled: requires_payment_method, "
            "requires_capture, requires_confirmation, requires_action, processing."
        )
    intent.canceled_at = fake.clock.now()
    intent.cancellation_reason = params.cancellation_reason
    intent.change("canceled", intent.failure_code)
    fake.announce(intent)
    return Reply.ok(intent.public())


def capture_payment_intent(fake: CardCo, account: Account, params: CaptureParams) -> Reply:
    """The effect of `POST /v1/payment_intents/{id}/capture`: `requires_capture` -> `succeeded`."""
    intent = find_intent(fake, account, params.intent)
    if intent.status != "requires_capture":
        raise unexpected_state(
            f"This PaymentIntent could not be captured because it has a status of {intent.stripe_status()}. Only "
            "a PaymentIntent with one of the following statuses may be captured: requires_capture."
        )
    if params.amount_to_capture not in (None, intent.amount_minor):
        raise invalid_request("The fake captures the full amount only.", param="amount_to_capture")
    intent.change("succeeded")
    fake.announce(intent)
    return Reply.ok(intent.public())


def create_refund(
    fake: CardCo, account: Account, key: str | None, params: RefundParams, rule: FaultRule | None
) -> Reply:
    """The effect of `POST /v1/refunds`."""
    intent = _refunded_intent(fake, account, params)
    if params.amount not in (None, intent.amount_minor):
        raise invalid_request(
            f"The fake refunds a PaymentIntent in full: amount must be {intent.amount_minor} or left out.",
            param="amount",
        )
    pending = [r for r in fake.store.refunds.values() if r.payment == intent.id and r.status == "processing"]
    if intent.status == "refunded" or pending:
        raise invalid_request(f"Charge {intent.latest_charge} has already been refunded.",
                              code="charge_already_refunded")
    if intent.status != "succeeded":
        raise unexpected_state(f"This PaymentIntent ({intent.id}) does not have a successful charge to refund.")
    now = fake.clock.now()
    refund = StripeRefund(
        id=new_id(StripeRefund.id_prefix), account=account.id, client_reference=params.client_reference,
        idempotency_key=key or "", amount_minor=intent.amount_minor, currency=intent.currency, status="failed",
        created_at=now, payment=intent.id, expires_at=now, charge=intent.latest_charge,
        metadata=dict(params.metadata), reason=params.reason,
    )
    refused = (rule.code or "unknown") if rule is not None and rule.action == "decline" else None
    return take_refund(fake, refund, rule, refused, "unknown")


def _refunded_intent(fake: CardCo, account: Account, params: RefundParams) -> PaymentIntent:
    """The PaymentIntent a refund names, by `payment_intent` or by its `charge` (400 if unknown)."""
    if params.payment_intent is not None:
        try:
            return find_intent(fake, account, params.payment_intent)
        except StripeError:
            raise no_such("payment_intent", params.payment_intent, "payment_intent", status=400) from None
    if params.charge is None:
        raise invalid_request("One of the following params should be provided for this request: payment_intent "
                              "or charge.", code="parameter_missing", param="payment_intent")
    for intent in fake.store.payments.values():
        if isinstance(intent, PaymentIntent) and intent.account == account.id and intent.latest_charge == params.charge:
            return intent
    raise no_such("charge", params.charge, "charge", status=400)
