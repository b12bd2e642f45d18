"""What ``GET /openapi.json`` says about each route (API.md, every section with an endpoint).

Paths, methods and path parameters come from ``gateway.app.routes()``; request and query schemas
from the pydantic models the handlers parse with; problem codes and statuses from the domain error
tree. This table adds what a route cannot say about itself: who may call it, which model its body
and query are, which successes it answers and which domain errors it may raise. A route added to
``routes()`` without an entry here fails ``tests/integration/test_openapi.py``.

Added for every entry by :mod:`gateway.http.openapi`: 401 ``auth.missing``/``auth.invalid`` and
the role refusal when it needs a token; 413 and 422 ``request.invalid`` when it takes a body;
422 when it takes a query; a problem document as the default response. A ``paged`` list gets the
paging convention of :mod:`gateway.http.paging`: ``limit``, ``order`` and ``cursor``, their 400
codes, and the ``Link`` header on its 200 answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from gateway.auth.tokens import Role
from gateway.domain import effect_errors as ee
from gateway.domain import errors as e
from gateway.domain import payout_errors as pe
from gateway.http import (
    ops_attempts,
    ops_escalations,
    ops_notifications,
    ops_outbox,
    ops_payouts,
    ops_reconciliation,
    ops_refunds,
    orders,
    payouts,
    reference_data,
)
from gateway.http.ops import NoteBody


@dataclass(frozen=True)
class Reply:
    """One success: its description, the shape of its body (``api_shapes.SHAPES`` name, or
    ``[name]`` for a list of them; None for no body) and the headers it sets."""

    description: str
    shape: str | None = None
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Operation:
    summary: str
    roles: tuple[Role, ...]
    ok: dict[int, Reply]
    errors: tuple[type[e.PaygateError], ...] = ()
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    # What a caller with a token of another role gets; orders answer 404 so as never to reveal one.
    refusal: type[e.PaygateError] = e.Forbidden
    # A body that is not a pydantic model (verified as raw bytes), by its shape name.
    raw_body: str | None = None
    header_params: tuple[str, ...] = ()
    # A list (its 200 body is an array): paged by gateway.http.paging (docs/decisions/0036).
    paged: bool = False


_ORDER = Reply("The order", "Order")
_STATUS = Reply("Final state, or Started with a current next_action", "PaymentStatus")
_PENDING = Reply("Started without a current action, or Unknown: poll the status URL", "PaymentStatus", ("Location",))
_PAYOUT = Reply("The payout with its decisions, grants and attempts, oldest first", "Payout")
_DECISION = Reply("A fresh, immutable decision", "Decision")
_RECALL_DECISION = Reply("A fresh, immutable recall decision (docs/decisions/0015)", "RecallDecision")
_RECORD = Reply("The record as stored, with its version", "ReferenceRecord")
_PAYOUT_ERRORS = (pe.PayoutNotFound, pe.AttemptUnresolved)

CATALOG: dict[tuple[str, str], Operation] = {
    ("GET", "/healthz"): Operation("The process is up", (), {200: Reply("Up", "Health")}),
    ("GET", "/readyz"): Operation("The database and the broker answer", (), {
        200: Reply("Ready", "Health"), 503: Reply("Not ready; names the failing check", "Health")}),
    ("GET", "/metrics"): Operation("Prometheus text", (), {200: Reply("text/plain; version=0.0.4")}),
    ("GET", "/openapi.json"): Operation("This document", (), {200: Reply("OpenAPI 3.1")}),

    ("POST", "/v1/orders"): Operation(
        "Create an order (same id and body again: the existing order)", ("merchant",),
        {201: _ORDER, 200: Reply("The existing order with the same terms", "Order")},
        (e.OrderConflict, e.ReturnUrlRefused), body=orders.NewOrder, refusal=e.OrderNotFound),
    ("GET", "/v1/orders/{order_id}"): Operation(
        "Read an order (its merchant or its customer), with its refunds", ("merchant", "customer"), {200: _ORDER},
        (e.OrderNotFound,), refusal=e.OrderNotFound),
    ("POST", "/v1/orders/{order_id}/cancel"): Operation(
        "Cancel an order: Cancelled, or CancelRequested while an attempt is live", ("merchant",), {200: _ORDER},
        (e.OrderNotFound, e.OrderPaid), refusal=e.OrderNotFound),
    ("POST", "/v1/orders/{order_id}/refund"): Operation(
        "Refund a paid order in full: its own decision, grant and attempts (the same operation that refunds a "
        "payment that succeeded after the order's cancellation)", ("merchant",),
        {200: Reply("A fresh, immutable refund decision (docs/decisions/0019)", "RefundDecision")},
        (e.OrderNotFound, e.OrderNotRefundable, e.RefundUnresolved), body=orders.RefundRequest,
        refusal=e.OrderNotFound),
    ("POST", "/v1/orders/{order_id}/payment"): Operation(
        "Start or report the order's live payment attempt", ("customer",), {200: _STATUS, 202: _PENDING},
        (e.OrderNotFound, e.OrderPaid, e.OrderCancelled, e.OrderRefunded, e.PaymentNotStarted,
         e.ProviderAccountUnavailable),
        refusal=e.OrderNotFound),
    ("GET", "/v1/orders/{order_id}/payment/status"): Operation(
        "The latest attempt's status; never sends anything", ("customer",),
        {200: _STATUS, 202: Reply("NotStarted, Started or Unknown", "PaymentStatus", ("Location",))},
        (e.OrderNotFound, e.PaymentNotFound), refusal=e.OrderNotFound),

    ("POST", "/v1/webhooks/{endpoint_id}"): Operation(
        "A provider notification, authenticated by its Standard Webhooks signature", (),
        {204: Reply("Recorded and handled, or a duplicate of one that was")},
        (e.WebhookEndpointNotFound, e.WebhookSignatureInvalid, e.WebhookTimestampOutOfTolerance,
         e.NotificationNotRecorded),
        raw_body="CardCoNotification", header_params=("webhook-id", "webhook-timestamp", "webhook-signature")),

    ("GET", "/v1/ops/escalations"): Operation(
        "Escalation episodes, oldest first", ("operator",), {200: Reply("Episodes", "[Escalation]")},
        query=ops_escalations.EscalationQuery, paged=True),
    ("POST", "/v1/ops/escalations/{escalation_id}/acknowledge"): Operation(
        "A person has seen the episode; reminders slow down", ("operator",), {200: Reply("The episode", "Escalation")},
        (e.EscalationNotFound, e.EscalationResolved)),
    ("POST", "/v1/ops/escalations/{escalation_id}/resolve"): Operation(
        "Close the episode with a note; no attempt changes", ("operator",), {200: Reply("The episode", "Escalation")},
        (e.EscalationNotFound, e.EscalationResolved), body=NoteBody),
    ("GET", "/v1/ops/overview"): Operation(
        "The system at a glance: attempts per minute by outcome over the last hour, Unknown attempts, open "
        "escalations by reason, outbox backlog, provider calls per account, lookup tokens and pauses, payouts "
        "by state", ("operator",), {200: Reply("The Overview read model", "Overview")}),
    ("GET", "/v1/ops/attempts"): Operation(
        "Payment attempts in one state (or all), oldest first", ("operator",), {200: Reply("Attempts", "[Attempt]")},
        query=ops_attempts.AttemptQuery, paged=True),
    ("GET", "/v1/ops/attempts/{attempt_id}"): Operation(
        "One attempt and its full event history, oldest first", ("operator",),
        {200: Reply("The attempt and its events", "AttemptHistory")}, (e.AttemptNotFound,)),
    ("POST", "/v1/ops/notifications/{event_id}/apply"): Operation(
        "Apply a stored, unmatched notification to an attempt", ("operator",),
        {200: Reply("The attempt after the ordinary conditional transition", "AppliedNotification")},
        (e.NotificationNotFound, e.AttemptNotFound, e.NotificationAlreadyApplied, e.NotificationNotApplicable),
        body=ops_notifications.ApplyNotification),
    ("GET", "/v1/ops/notifications"): Operation(
        "Stored notifications no attempt took at arrival (the reconciliation queue), by arrival", ("operator",),
        {200: Reply("Notifications (never their payloads)", "[StoredNotification]")},
        query=ops_notifications.NotificationQuery, paged=True),
    ("GET", "/v1/ops/payouts"): Operation(
        "Payouts of every tenant in one state, by creation, each with its latest attempt", ("operator",),
        {200: Reply("Payouts", "[OpsPayout]")}, query=ops_payouts.PayoutQuery, paged=True),
    ("GET", "/v1/ops/payout-approvals"): Operation(
        "Draft payouts whose latest decision waits for an acknowledgment or an approval, with who may act",
        ("operator",), {200: Reply("Payouts awaiting a person", "[AwaitingPayout]")},
        query=ops_payouts.AwaitingQuery, paged=True),
    ("GET", "/v1/ops/payouts/{payout_id}"): Operation(
        "A payout of any tenant with its decisions, grants, attempts, recalls and history", ("operator",),
        {200: Reply("The payout and its history", "OpsPayoutHistory")}, (pe.PayoutNotFound,)),
    ("GET", "/v1/ops/recalls"): Operation(
        "Payout recall attempts in one state, by claim", ("operator",),
        {200: Reply("Recall attempts", "[RecallAttempt]")}, query=ops_payouts.RecallQuery, paged=True),
    ("GET", "/v1/ops/refunds"): Operation(
        "Refunds of paid orders in one state, by decision, each with its attempt", ("operator",),
        {200: Reply("Refunds", "[OpsRefund]")}, query=ops_refunds.RefundQuery, paged=True),
    ("GET", "/v1/ops/refunds/{order_id}"): Operation(
        "An order's refunds with their decisions, grants, attempts and history", ("operator",),
        {200: Reply("The order, its refunds and their history", "OpsRefundHistory")}, (e.OrderNotFound,)),
    ("POST", "/v1/ops/reconciliation/runs"): Operation(
        "Start a provider-side reconciliation run over one account's window; a worker executes it",
        ("operator",), {202: Reply("The Running run", "ReconciliationRun", ("Location",))},
        (e.ReconciliationAccountUnknown, e.ReconciliationWindowInvalid), body=ops_reconciliation.NewRun),
    ("GET", "/v1/ops/reconciliation/runs"): Operation(
        "Provider-side reconciliation runs, by request time", ("operator",),
        {200: Reply("Runs", "[ReconciliationRun]")}, query=ops_reconciliation.RunQuery, paged=True),
    ("GET", "/v1/ops/reconciliation/runs/{run_id}"): Operation(
        "One run with its counts and the findings a person may act on (all but matched)", ("operator",),
        {200: Reply("The run and its findings", "ReconciliationRunFindings")}, (e.ReconciliationRunNotFound,)),
    ("GET", "/v1/ops/outbox"): Operation(
        "Outbox messages in one delivery state, oldest first", ("operator",),
        {200: Reply("Messages (never their payloads)", "[OutboxMessage]")}, query=ops_outbox.OutboxQuery, paged=True),
    ("POST", "/v1/ops/outbox/{message_id}/retry"): Operation(
        "A dead-lettered or backing-off message is due now", ("operator",),
        {200: Reply("The message", "OutboxMessage")},
        (e.OutboxMessageNotFound, e.OutboxDispatched, e.OutboxDiscarded)),
    ("POST", "/v1/ops/outbox/{message_id}/discard"): Operation(
        "Drop a dead-lettered message for good, with a note", ("operator",),
        {200: Reply("The message", "OutboxMessage")},
        (e.OutboxMessageNotFound, e.OutboxNotDead, e.OutboxDiscarded), body=NoteBody),

    ("POST", "/v1/payouts"): Operation(
        "Create a payout in Draft (same id and terms again: the existing one)", ("clerk",),
        {201: _PAYOUT, 200: _PAYOUT}, (pe.PayoutConflict,), body=payouts.NewPayout),
    ("GET", "/v1/payouts/{payout_id}"): Operation(
        "A payout of the clerk's tenant", ("clerk",), {200: _PAYOUT}, (pe.PayoutNotFound,)),
    ("POST", "/v1/payouts/{payout_id}/submit"): Operation(
        "Submit the payout with the same terms for a decision", ("clerk",), {200: _DECISION},
        (*_PAYOUT_ERRORS, pe.TermsMismatch), body=payouts.SubmitBody),
    ("POST", "/v1/payouts/{payout_id}/acknowledge"): Operation(
        "Acknowledge a recently changed destination", ("clerk",), {200: _DECISION}, _PAYOUT_ERRORS,
        body=payouts.Acknowledgment),
    ("POST", "/v1/payouts/{payout_id}/approve"): Operation(
        "Approve as a clerk who is not the requester and whose limit covers the amount", ("clerk",),
        {200: _DECISION}, _PAYOUT_ERRORS, body=payouts.Empty),
    ("POST", "/v1/payouts/{payout_id}/reauthorize"): Operation(
        "A materially new attempt after a final one", ("clerk",), {200: _DECISION}, _PAYOUT_ERRORS,
        body=payouts.Empty),
    ("POST", "/v1/payouts/{payout_id}/recall"): Operation(
        "Recall a Paid payout: a separate operation with its own decision, grant and attempts", ("clerk",),
        {200: _RECALL_DECISION}, (pe.PayoutNotFound, pe.NotRecallable, pe.AttemptUnresolved), body=payouts.Empty),
    ("POST", "/v1/payouts/{payout_id}/cancel"): Operation(
        "Cancel the payout", ("clerk",), {200: _PAYOUT}, (pe.PayoutNotFound, pe.NotCancellable), body=payouts.Empty),
    ("POST", "/v1/grants/{grant_id}/revoke"): Operation(
        "Revoke an unconsumed grant", ("operator", "admin"), {200: Reply("The grant", "Grant")},
        (pe.GrantNotFound, pe.GrantNotRevocable), body=payouts.Revocation),

    ("PUT", "/v1/tenants/{tenant_id}"): Operation(
        "Upsert a payout tenant", ("admin",), {200: _RECORD}, body=reference_data.TenantBody),
    ("PUT", "/v1/beneficiaries/{beneficiary_id}"): Operation(
        "Upsert a beneficiary", ("admin",), {200: _RECORD}, body=reference_data.BeneficiaryBody),
    ("PUT", "/v1/destinations/{destination_id}"): Operation(
        "Upsert a destination; its provider token is never returned", ("admin",), {200: _RECORD},
        body=reference_data.DestinationBody),
    ("PUT", "/v1/policy/{operation}"): Operation(
        "Publish a policy release", ("admin",), {200: _RECORD}, (pe.PolicyOperationNotFound,),
        body=reference_data.PolicyBody),

    ("GET", "/v1/keys/certificates"): Operation(
        "Every key that may have signed a certificate, for offline verification", (),
        {200: Reply("The published keys", "CertificateKeys")}),
    ("GET", "/v1/payouts/{payout_id}/certificate"): Operation(
        "The signed certificate of the payout's confirmed effect", ("clerk", "operator", "admin"),
        {200: Reply("The certificate and its signature", "Certificate")}, (pe.PayoutNotFound, ee.CertificateNotFound)),
    ("GET", "/v1/orders/{order_id}/payment/certificate"): Operation(
        "The signed certificate of the order's confirmed payment", ("merchant", "customer"),
        {200: Reply("The certificate and its signature", "Certificate")}, (e.OrderNotFound, ee.CertificateNotFound),
        refusal=e.OrderNotFound),
}
