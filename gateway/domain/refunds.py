"""Refunds of an order's payment, as pure rules (docs/decisions/0019, 0020).

Seed 004, "Cancellation": "a cancellation that commits just after a send intent cannot recall the
dispatch that intent already authorized. The attempt is then left to resolve through
reconciliation, and if it turns out to have succeeded, the refund is its own operation." Seed 000
section 17 says what "its own operation" means: "its own request, its own decision, its own
authority, and its own attempts and outcomes", and "the original ... records stay as they are".

So a payment that succeeds on a ``CancelRequested`` order does not make the order ``Paid`` with an
ordinary confirmation: the order becomes ``PaidAfterCancel``, the merchant is told exactly that,
and a refund decision is taken in the same transaction. A refund that succeeds makes the order
``Refunded``; one that ends without effect leaves the order as it was and tells the merchant; money
taken on a cancelled order with no refund under way is escalated until a refund succeeds. Merchants ask
for the same full refund of a ``Paid`` order (``POST /v1/orders/{id}/refund``). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.domain.attempt_kinds import PAYMENT_REFUND
from gateway.domain.attempts import ORDER_CONFIRMATION
from gateway.domain.errors import OrderNotRefundable, RefundUnresolved
from gateway.domain.outcomes import AttemptState

OPERATION = "payment.refund"
# The refund policy is code, not a release an admin must publish first: an automatic refund of a
# cancelled order must never wait for one. Its version is what decisions and effect records name.
POLICY_VERSION = "payment.refund/2026-12-01.1"
AUDIENCE = "payment-refund-executor"
JOB_KIND = PAYMENT_REFUND.job
SYSTEM_ACTOR = "system:cancellation"

Cause = Literal["paid-after-cancel", "merchant-request"]
Outcome = Literal["Allowed", "Denied", "Deferred"]
Reason = Literal["refund.allowed", "refund.already-refunded", "context.unavailable"]

# Merchant-sink effects (API.md "Shapes": kind and dedup key; docs/decisions/0020).
ORDER_PAID_AFTER_CANCEL = "order-paid-after-cancel"
ORDER_REFUNDED = "order-refunded"
ORDER_REFUND_FAILED = "order-refund-failed"

REFUNDABLE = frozenset({"Paid", "PaidAfterCancel"})


def client_reference(order_id: str, number: int) -> str:
    """Refund attempt N of an order: ``<order_id>-r<N>``, never ``-a<N>`` (a payment attempt's), so
    no lookup or saved result of the payment can resolve the refund or the reverse."""
    return f"{order_id}-r{number}"


def idempotency_key(order_id: str, number: int) -> str:
    return f"refund-{order_id}-r{number}"


def owed_escalation_key(order_id: str) -> str:
    """The open question "this cancelled order's money is still taken, with no refund under way"
    (a decision that was not Allowed, a refund that ended without effect, a grant that lapsed
    unclaimed), raised by the refund sweep (refunds.sql ``owed_refunds``), closed by the refund
    that succeeds."""
    return f"order:{order_id}:refund-owed"


def grant_expired_escalation_key(order_id: str) -> str:
    """A merchant's refund whose grant lapsed unclaimed (its job lost or refused): the refund was
    never sent and the order is still paid; the order's next refund decision closes it."""
    return f"order:{order_id}:refund-grant-expired"


# Decision ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RefundContext:
    """What a refund decision depends on, read under the order lock."""

    order_state: str
    unresolved: bool  # an Issued refund grant, or a refund attempt Claimed, Started or Unknown
    refunded: bool  # a refund attempt Succeeded
    provider_payment_id: str | None  # of the order's succeeded payment attempt


def decide(context: RefundContext) -> tuple[Outcome, Reason]:
    """The decision for one refund request. Raises (no decision at all) for an order that has no
    payment to refund and while another refund might still take effect, as a recall does
    (docs/decisions/0015); a refund after one that succeeded is Denied; a paid attempt whose
    provider payment id is unknown cannot be named to CardCo: Deferred."""
    if context.order_state not in REFUNDABLE:
        raise OrderNotRefundable(f"the order is {context.order_state}")
    if context.unresolved:
        raise RefundUnresolved()
    if context.refunded:
        return "Denied", "refund.already-refunded"
    if context.provider_payment_id is None:
        return "Deferred", "context.unavailable"
    return "Allowed", "refund.allowed"


# The order, before and after ---------------------------------------------------------------------

@dataclass(frozen=True)
class PaymentSettlement:
    """What a payment attempt's success does to its order: the new state, the merchant effect that
    replaces an ordinary confirmation, and whether a refund is owed at once."""

    order_state: str
    confirmation: str
    refund_owed: bool


def after_payment(order_state: str) -> PaymentSettlement:
    """``Open`` -> ``Paid`` with an ``order-confirmation``; ``CancelRequested`` (the cancellation
    committed just after the send intent) -> ``PaidAfterCancel`` with ``order-paid-after-cancel``
    and an automatic refund; any other state is left as it is."""
    if order_state == "CancelRequested":
        return PaymentSettlement("PaidAfterCancel", ORDER_PAID_AFTER_CANCEL, True)
    if order_state == "Open":
        return PaymentSettlement("Paid", ORDER_CONFIRMATION, False)
    return PaymentSettlement(order_state, ORDER_CONFIRMATION, False)


@dataclass(frozen=True)
class RefundSettlement:
    """What a refund attempt's resolution does to its order (None: nothing), and whether it ends the
    order's ``refund-owed`` episode."""

    order_state: str | None = None
    effect: str | None = None
    closes_owed: bool = False


def after_refund(order_state: str, refund_state: AttemptState) -> RefundSettlement:
    """Succeeded -> ``Refunded`` with ``order-refunded``, closing any refund-owed escalation;
    Failed, NotApplied or NotStarted -> the order stays as it is (the money is still taken) with
    ``order-refund-failed``; Started and Unknown change nothing: the refund is not known yet."""
    if order_state not in REFUNDABLE:
        return RefundSettlement()
    if refund_state is AttemptState.SUCCEEDED:
        return RefundSettlement("Refunded", ORDER_REFUNDED, closes_owed=True)
    if refund_state in (AttemptState.FAILED, AttemptState.NOT_APPLIED, AttemptState.NOT_STARTED):
        return RefundSettlement(None, ORDER_REFUND_FAILED)
    return RefundSettlement()
