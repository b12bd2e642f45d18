"""JSON Schemas of what the gateway answers, for ``GET /openapi.json`` (API.md "Operations").

Request schemas come from the pydantic models the handlers parse with; responses are rendered
from rows by plain functions, so their shapes are written here, naming the fields API.md
promises (``required``) and the values it fixes (``enum``). Other fields may be added (API.md:
"You may add endpoints, fields and headers"), so objects stay open.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.attempt_kinds import KINDS
from gateway.domain.overview import OUTCOMES
from gateway.domain.reconciliation import CLASSES as RECONCILIATION_CLASSES

Schema = dict[str, Any]

ATTEMPT_STATES = ["NotStarted", "Started", "Unknown", "Succeeded", "Failed", "NotApplied"]
PIPELINE_STATES = ["Claimed", *ATTEMPT_STATES]  # payout, recall and refund attempts
PAYOUT_STATES = ["Draft", "Approved", "Executing", "Unknown", "Paid", "Failed", "Cancelled"]
_STRING_OR_NULL: Schema = {"type": ["string", "null"]}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_SECONDS_OR_NULL: Schema = {"type": ["number", "null"], "minimum": 0}
_MONEY: Schema = {"amount_minor": {"type": "integer", "minimum": 1},
                  "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}


def shape(*required: str, **properties: Schema) -> Schema:
    """An open object that must carry ``required``, with a schema for some of its properties."""
    return {"type": "object", "required": list(required),
            "properties": {**{name: {} for name in required}, **properties}}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def array_of(name: str) -> Schema:
    return {"type": "array", "items": ref(name)}


# A provider-side reconciliation run (docs/decisions/0071).
_RUN: Schema = shape(
    "run_id", "provider_account", "from", "to", "state", "counts", run_id={"type": "string", "format": "uuid"},
    state={"enum": ["Running", "Finished", "Failed"]},
    counts=shape(*RECONCILIATION_CLASSES, **{name: _COUNT for name in RECONCILIATION_CLASSES}),
    objects_read=_COUNT, finished_at=_STRING_OR_NULL, failure=_STRING_OR_NULL)

# The Overview's attempts started and settled by outcome, in one minute or over the hour.
_PER_MINUTE: Schema = shape("started", *OUTCOMES, **{name: _COUNT for name in ("started", *OUTCOMES)})

SHAPES: dict[str, Schema] = {
    "Problem": shape(
        "type", "title", "status", "code", type={"type": "string"}, title={"type": "string"},
        status={"type": "integer"}, code={"type": "string"}, detail={"type": "string"},
        errors={"type": "array", "items": shape("field", "message")}),
    "Order": shape("order_id", "customer_id", "amount_minor", "currency", "state", **_MONEY,
                   state={"enum": ["Open", "Paid", "Cancelled", "CancelRequested", "PaidAfterCancel", "Refunded"]},
                   refund={"oneOf": [{"type": "null"}, ref("RefundSummary")]},
                   return_url={"description": "Where 3-D Secure's redirect returns the customer (https, or http on "
                               "loopback; null: the provider account's default)", **_STRING_OR_NULL}),
    "RefundSummary": shape("refund_number", "cause", "state", "decision_id", "attempt_id",
                           cause={"enum": ["paid-after-cancel", "merchant-request"]},
                           state={"enum": ["Requested", "Expired", *PIPELINE_STATES]}),
    "RefundDecision": shape("decision_id", "order_id", "operation", "cause", "outcome", "reason", "policy_version",
                            "grant", operation={"const": "payment.refund"},
                            outcome={"enum": ["Allowed", "Denied", "Deferred"]}),
    "PaymentStatus": shape(
        "order_id", "attempt_id", "attempt_number", "client_reference", "state", "provider_status", "next_action",
        "outcome_reason", "provider_payment_id", "status_url", "client_secret", state={"enum": ATTEMPT_STATES},
        next_action={"description": "The customer's current action, else null: type redirect_to_url with its url "
                     "(CardCo; Stripe with a return_url), or Stripe's use_stripe_sdk", "oneOf": [
                         {"type": "null"}, shape("type", type={"type": "string"}, url={"type": "string"})]},
        client_secret={"description": "While the current next_action is Stripe's use_stripe_sdk: the "
                       "PaymentIntent's client secret for Stripe.js, read live and kept nowhere; else null "
                       "(also when the read failed: poll on). Only the owning customer sees it",
                       **_STRING_OR_NULL},
        refund={"oneOf": [{"type": "null"}, ref("RefundSummary")]}),
    "Escalation": shape(
        "escalation_id", "escalation_key", "reason", "attempt_id", "raised_at", "acknowledged_at", "reminder_count",
        "resolved_at", "details", escalation_id={"type": "integer"}, attempt_id=_STRING_OR_NULL,
        reminder_count={"type": "integer"}, details={"type": "object"}),
    "ReconciliationRun": _RUN,
    "ReconciliationRunFindings": {"allOf": [_RUN, shape("findings", findings={"type": "array", "items": shape(
        "kind", "provider_object_id", "class", "attempt_id", "details", "found_at",
        kind={"enum": sorted(kind.name for kind in KINDS)},
        **{"class": {"enum": ["evidence", "orphan", "disagreement", "missing"]}},
        attempt_id=_STRING_OR_NULL, details={"type": "object"})})]},
    "OutboxMessage": shape("message_id", "dedup_key", "kind", "ordering_key", "delivery_attempts", "last_error",
                           "created_at", "dispatched_at", "dead_lettered_at", "discarded_at",
                           message_id={"type": "integer"}, delivery_attempts={"type": "integer"}),
    "Attempt": shape(
        "attempt_id", "order_id", "attempt_number", "client_reference", "idempotency_key", "provider_account",
        "state", "outcome_reason", "provider_status", "provider_payment_id", "created_at", "first_sent_at",
        "escalation_deadline", "recovery_owner", "lease_expires_at", "next_check_at", "version", **_MONEY,
        attempt_id={"type": "string", "format": "uuid"}, state={"enum": ATTEMPT_STATES}),
    "AttemptEvent": shape("event_id", "kind", "occurred_at", "actor", "detail", event_id={"type": "integer"},
                          detail={"type": "object"}),
    "AttemptHistory": shape("attempt", "events", attempt=ref("Attempt"), events=array_of("AttemptEvent")),
    "AppliedNotification": shape("notification_event_id", "attempt_id", "state", "resolved_escalations",
                                 state={"enum": ATTEMPT_STATES}),
    "StoredNotification": shape(
        "notification_event_id", "received_at", "provider_account", "provider_event_id", "type", "problem",
        "applicable", "applied_to", "candidates", notification_event_id={"type": "integer"},
        applicable={"type": "boolean"}, applied_to=_STRING_OR_NULL, candidates={"type": "array"}),
    "OpsPayout": shape("payout_id", "tenant_id", "state", "version", "created_at", "attempt", **_MONEY,
                       state={"enum": PAYOUT_STATES}, attempt={"type": ["object", "null"]}),
    "AwaitingPayout": shape("payout_id", "tenant_id", "requester_id", "state", "decision", "awaiting", **_MONEY,
                            awaiting=shape("action", "rule", "clerks", action={"enum": ["acknowledge", "approve"]},
                                           clerks={"type": "array", "items": {"type": "string"}})),
    "OpsPayoutHistory": shape("payout_id", "tenant_id", "state", "decisions", "grants", "attempts", "recalls",
                              "awaiting", "history", state={"enum": PAYOUT_STATES},
                              history={"type": "array", "items": shape("event_id", "kind", "occurred_at", "actor",
                                                                       "detail")}),
    "RecallAttempt": shape("attempt_id", "payout_id", "tenant_id", "recall_number", "state", "client_reference",
                           **_MONEY, state={"enum": PIPELINE_STATES}),
    "OpsRefund": shape("grant_id", "order_id", "refund_number", "state", "cause", "attempt_id", **_MONEY,
                       state={"enum": ["Requested", "Expired", *PIPELINE_STATES]}),
    "OpsRefundHistory": shape("order", "refund", "refunds", "history", order={"type": "object"},
                              history={"type": "array"}),
    "Payout": shape("payout_id", "state", "version", "decisions", "grants", "attempts", "effect", **_MONEY,
                    state={"enum": PAYOUT_STATES},
                    decisions=array_of("Decision"), grants={"type": "array"}, attempts={"type": "array"}),
    "Decision": shape("decision_id", "outcome", "reason", "policy_version", "terms_fingerprint", "grant", outcome={
        "enum": ["Allowed", "Denied", "Deferred", "AcknowledgmentRequired", "EscalationRecommended"]}),
    "Grant": shape("grant_id", "state", "not_before", "expires_at", "attempt_number"),
    "RecallDecision": shape("decision_id", "operation", "outcome", "reason", "policy_version", "grant",
                            outcome={"enum": ["Allowed", "Denied", "Deferred"]}),
    "ReferenceRecord": shape("version"),
    "CardCoNotification": shape(
        "type", "data", id={"type": "string"}, type={"type": "string"}, created={"type": "string"},
        data=shape("object", object={"type": "object"})),
    "Certificate": shape("certificate", "signature", certificate={"type": "object"}, signature=shape(
        "alg", "key_id", "value", alg={"const": "Ed25519"}, key_id={"type": "string"}, value={"type": "string"})),
    "CertificateKeys": shape("keys", keys={"type": "array", "items": shape("key_id", "alg", "public_key", "active")}),
    "Health": shape("status", status={"type": "string"}),
    "Overview": shape(
        "as_of", "window_minutes", "attempts_per_minute", "attempts_last_hour", "unknown_attempts", "escalations",
        "outbox", "providers", "payouts_by_state", as_of={"type": "string", "format": "date-time"},
        window_minutes={"type": "integer"},
        attempts_per_minute={"type": "array", "items": {"allOf": [
            _PER_MINUTE, shape("minute", minute={"type": "string", "format": "date-time"})]}},
        attempts_last_hour=_PER_MINUTE,
        unknown_attempts={"type": "array", "items": shape(
            "kind", "unknown", "oldest_since", "oldest_age_s",
            kind={"enum": [kind.name for kind in KINDS]}, unknown=_COUNT,
            oldest_since=_STRING_OR_NULL, oldest_age_s=_SECONDS_OR_NULL)},
        escalations={"type": "array", "items": shape("reason", "open", "oldest_s", open=_COUNT)},
        outbox=shape("pending", "oldest_pending_age_s", "dead_letters", "by_kind", pending=_COUNT,
                     oldest_pending_age_s=_SECONDS_OR_NULL, dead_letters=_COUNT,
                     by_kind={"type": "array", "items": shape("kind", "pending", "dead_letters")}),
        providers={"type": "array", "items": shape(
            "account", "calls", "errors", "error_rate", "p50_s", "p99_s", "lookup_tokens", "lookup_burst",
            "paused_until", "pause_reason", calls=_COUNT, errors=_COUNT, error_rate=_SECONDS_OR_NULL,
            p50_s=_SECONDS_OR_NULL, p99_s=_SECONDS_OR_NULL, lookup_tokens={"type": "number"},
            paused_until=_STRING_OR_NULL, pause_reason=_STRING_OR_NULL)},
        payouts_by_state={"type": "object", "propertyNames": {"enum": PAYOUT_STATES},
                          "additionalProperties": _COUNT}),
}
