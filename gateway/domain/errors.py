"""The domain error tree. Each error's ``code`` is the stable problem+json ``code`` of API.md,
its ``status`` the HTTP status, and its docstring its default title (STYLE, example 10)."""

from __future__ import annotations

from typing import Any, ClassVar


class PaygateError(Exception):
    """Something went wrong."""

    code: ClassVar[str] = "internal"
    status: ClassVar[int] = 500

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        self.detail = detail
        self.extra = extra
        super().__init__(detail or self.title)

    @property
    def title(self) -> str:
        return (type(self).__doc__ or self.code).strip().splitlines()[0]


class AuthMissing(PaygateError):
    """Authentication required."""

    code, status = "auth.missing", 401


class AuthInvalid(PaygateError):
    """The bearer token is not valid."""

    code, status = "auth.invalid", 401


class Forbidden(PaygateError):
    """This role may not use this resource."""

    code, status = "auth.forbidden", 403


class RequestInvalid(PaygateError):
    """The request is not valid."""

    code, status = "request.invalid", 422


class ReturnUrlRefused(RequestInvalid):
    """A ``return_url`` the customer's browser must not be sent to: not https, and not http on a
    loopback host (the redirect flow of 3-D Secure, docs/decisions/0078)."""

    code = "order.return_url_refused"



class RequestTooLarge(PaygateError):
    """The request body is too large."""

    code, status = "request.too_large", 413


class NotFound(PaygateError):
    """Not found."""

    code, status = "not_found", 404


class MethodNotAllowed(PaygateError):
    """Method not allowed."""

    code, status = "request.method_not_allowed", 405


class Unavailable(PaygateError):
    """A dependency is unavailable; try again later."""

    code, status = "service.unavailable", 503


class OrderNotFound(NotFound):
    """Order not found."""

    code = "order.not_found"


class OrderConflict(PaygateError):
    """An order with this id exists with different terms."""

    code, status = "order.conflict", 409


class OrderPaid(PaygateError):
    """The order is already paid."""

    code, status = "order.paid", 409


class OrderCancelled(PaygateError):
    """The order is cancelled."""

    code, status = "order.cancelled", 409


class OrderRefunded(PaygateError):
    """The order's payment was refunded; it takes no new payment."""

    code, status = "order.refunded", 409


class OrderNotRefundable(PaygateError):
    """Only a paid order (Paid or PaidAfterCancel) can be refunded; no decision was made."""

    code, status = "order.not_refundable", 409


class RefundUnresolved(PaygateError):
    """A refund of this order might still take effect; it is reconciled first. No decision was made."""

    code, status = "order.refund_unresolved", 409


class PaymentNotFound(NotFound):
    """The order has no payment attempt yet."""

    code = "payment.not_found"


class PaymentNotStarted(Unavailable):
    """The payment could not be started; nothing was sent. Retry after the indicated delay."""

    code = "payment.not_started"


class ProviderAccountUnavailable(Unavailable):
    """The order's provider account is not configured on this gateway."""

    code = "provider_account.unavailable"


class EscalationNotFound(NotFound):
    """No such escalation."""

    code = "escalation.not_found"


class EscalationResolved(PaygateError):
    """The escalation is already resolved."""

    code, status = "escalation.resolved", 409


class OutboxMessageNotFound(NotFound):
    """No such outbox message."""

    code = "outbox.not_found"


class OutboxNotDead(PaygateError):
    """Only a dead-lettered outbox message can be discarded."""

    code, status = "outbox.not_dead", 409


class OutboxDispatched(PaygateError):
    """The outbox message was already dispatched."""

    code, status = "outbox.dispatched", 409


class OutboxDiscarded(PaygateError):
    """The outbox message was discarded by an operator."""

    code, status = "outbox.discarded", 409


class WebhookEndpointNotFound(NotFound):
    """No webhook endpoint with this id is configured."""

    code = "webhook.endpoint_not_found"


class WebhookSignatureInvalid(PaygateError):
    """The webhook signature headers are missing, malformed or do not verify."""

    code, status = "webhook.signature_invalid", 401


class WebhookTimestampOutOfTolerance(PaygateError):
    """The webhook timestamp is more than 300 seconds from now."""

    code, status = "webhook.timestamp_out_of_tolerance", 401


class NotificationNotRecorded(Unavailable):
    """The notification could not be recorded; deliver it again."""

    code = "notification.not_recorded"


class NotificationNotFound(NotFound):
    """No such stored notification."""

    code = "notification.not_found"


class NotificationAlreadyApplied(PaygateError):
    """The notification was already applied to an attempt."""

    code, status = "notification.already_applied", 409


class NotificationNotApplicable(PaygateError):
    """The notification cannot be applied to this attempt."""

    code, status = "notification.not_applicable", 409


class AttemptNotFound(NotFound):
    """No such payment attempt."""

    code = "attempt.not_found"


class ReconciliationRunNotFound(NotFound):
    """No such provider-side reconciliation run."""

    code = "reconciliation.run_not_found"


class ReconciliationAccountUnknown(PaygateError):
    """The run names a provider account that is not configured."""

    code, status = "reconciliation.account_unknown", 422


class ReconciliationWindowInvalid(PaygateError):
    """The run's window is empty or reversed (``to`` must be after ``from``)."""

    code, status = "reconciliation.window_invalid", 422
