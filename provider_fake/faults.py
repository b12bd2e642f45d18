"""Fault rules: which request or webhook misbehaves, and how.

API.md "CardCo control API": a rule is flat JSON `{"operation", "action", "client_reference"?,
"nth"?, "times"?}` plus the action's parameters as sibling keys. `nth` is the 1-based
occurrence among requests matching the operation and reference; the rule applies to `times`
matching requests (default 1) starting at `nth` (default 1); `times: 0` means every matching
request from then on. `POST /_control/faults` replaces the whole set.

Every rule counts every request it matches; when several rules apply to one request the first
in the list wins (docs/decisions/0002-cardco-fault-semantics.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Operation = Literal[
    "create_payment",
    "get_payment",
    "list_payments",
    "refund_payment",
    "get_refund",
    "list_refunds",
    "get_payment_method",
    "create_payout",
    "get_payout",
    "list_payouts",
    "create_recall",
    "list_recalls",
    "cancel_payment",  # the Stripe dialect's (provider_fake/stripe/api.py)
    "capture_payment",
    "cancel_payout",
    "webhook",
]

REQUEST_ACTIONS = frozenset(
    {
        "drop_response",
        "timeout_before_effect",
        "error_500_after_effect",
        "error_500_before_effect",
        "rate_limit",
        "reject_invalid",
        "malformed_body",
        "empty_body",
        "delay_ms",
        "not_found_for_s",
        "hold_key_ms",
    }
)
OUTCOME_ACTIONS: dict[str, frozenset[str]] = {
    "decline": frozenset({"create_payment", "create_payout", "refund_payment"}),
    "requires_action": frozenset({"create_payment"}),
    "processing": frozenset({"create_payment", "create_payout", "create_recall", "refund_payment"}),
}
FINAL_STATUSES = {
    "create_payment": frozenset({"succeeded", "failed"}),
    "create_payout": frozenset({"paid", "failed"}),
    "create_recall": frozenset({"recalled", "failed"}),
    "refund_payment": frozenset({"succeeded", "failed"}),
}
WEBHOOK_ACTIONS = frozenset(
    {"duplicate", "delay_ms", "reorder", "omit_event_id", "tamper_amount", "drop", "bad_signature"}
)
# Actions that end the request before CardCo looks at its state (no effect, nothing saved).
BEFORE_EFFECT = frozenset(
    {"timeout_before_effect", "error_500_before_effect", "rate_limit", "reject_invalid"}
)


class FaultRule(BaseModel):
    """One rule; the parameters an action does not use are ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operation: Operation
    action: str
    client_reference: str | None = None
    nth: int = Field(default=1, ge=1)
    times: int = Field(default=1, ge=0)
    expires_in_s: float | None = Field(default=None, gt=0)
    complete_after_s: float | None = Field(default=None, ge=0)
    final_status: str | None = None
    count: int = Field(default=1, ge=1)
    code: str | None = None
    delay_ms: int = Field(default=0, ge=0)
    not_found_for_s: float = Field(default=0, ge=0)
    status: int = Field(default=500, ge=500, le=599)
    # `rate_limit`: the `Retry-After` header's seconds; null leaves the header out (Stripe does not
    # document it). `should_retry`: the Stripe dialect's `Stripe-Should-Retry` header (null: none).
    retry_after_s: int | None = Field(default=1, ge=0)
    should_retry: bool | None = None
    # `rate_limit` in the Stripe dialect: 400 with code `rate_limit`, as API versions before
    # 2015-09-08 answered (CardCo always answers 429).
    legacy_400: bool = False

    @model_validator(mode="after")
    def _action_fits_operation(self) -> FaultRule:
        if self.operation == "webhook":
            allowed = self.action in WEBHOOK_ACTIONS
        else:
            allowed = self.action in REQUEST_ACTIONS or self.operation in OUTCOME_ACTIONS.get(self.action, ())
        if not allowed:
            raise ValueError(f"action {self.action!r} does not apply to {self.operation!r}")
        if self.final_status is not None and self.final_status not in FINAL_STATUSES.get(self.operation, ()):
            raise ValueError(f"final_status {self.final_status!r} does not apply to {self.operation!r}")
        return self

    def matches(self, operation: str, client_reference: str | None) -> bool:
        return self.operation == operation and self.client_reference in (None, client_reference)

    def applies_to(self, occurrence: int) -> bool:
        """True when the rule covers this 1-based occurrence of a matching request."""
        if occurrence < self.nth:
            return False
        return self.times == 0 or occurrence < self.nth + self.times


class FaultRules(BaseModel):
    """The body of `POST /_control/faults`."""

    model_config = ConfigDict(extra="forbid")

    rules: list[FaultRule]


class FaultBook:
    """The active rules and how many matching requests each has seen."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._seen: list[int] = []

    def replace(self, rules: list[FaultRule]) -> None:
        self._rules = list(rules)
        self._seen = [0] * len(rules)

    def rules(self) -> list[FaultRule]:
        return list(self._rules)

    def match(self, operation: str, client_reference: str | None) -> FaultRule | None:
        """Count this request against every matching rule; return the first one that applies."""
        chosen: FaultRule | None = None
        for index, rule in enumerate(self._rules):
            if not rule.matches(operation, client_reference):
                continue
            self._seen[index] += 1
            if chosen is None and rule.applies_to(self._seen[index]):
                chosen = rule
        return chosen
