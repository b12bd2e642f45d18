"""Which CardCo faults one checkout, payout or recall meets ("CardCo faults chosen at
random per request from the whole control API"), and the rules of the faults that outlast one
request: lookup storms, CardCo's listing lag on a payout whose answer was lost, and
the slow provider a pause past a lease needs.

Each choice is a list of CardCo fault rules (API.md, "CardCo control API") bound to the object's
client reference, so they hit that object only; a rule without ``times`` applies to the first
matching request (the first send, the first lookup, the first webhook), so a resend or a later
lookup meets a working provider, as after a real incident. A rule with ``times: 0`` applies to
every matching request while it is installed: the campaign installs it again with every wave
until its end (``POST /_control/faults`` replaces the set; such a rule has no count to lose).
Choices come from the campaign's seeded ``random.Random`` only.
"""

from __future__ import annotations

import random
from typing import Any

Rule = dict[str, Any]

# Request faults a create can meet (API.md "CardCo control API"), with their parameters.
CREATE_FAULTS: tuple[Rule, ...] = (
    {"action": "drop_response"},
    {"action": "timeout_before_effect"},
    {"action": "error_500_after_effect"},
    {"action": "error_500_before_effect", "status": 503},
    {"action": "rate_limit", "retry_after_s": 1},
    {"action": "reject_invalid"},
    {"action": "malformed_body"},
    {"action": "empty_body"},
    {"action": "delay_ms", "delay_ms": 1500},
    {"action": "not_found_for_s", "not_found_for_s": 4},
)
PAYMENT_OUTCOMES: tuple[Rule, ...] = (
    {"action": "decline", "code": "insufficient_funds"},
    {"action": "requires_action", "expires_in_s": 4},
    {"action": "processing", "complete_after_s": 2, "final_status": "succeeded"},
    {"action": "processing", "complete_after_s": 2, "final_status": "failed"},
)
PAYOUT_OUTCOMES: tuple[Rule, ...] = (
    {"action": "decline", "code": "destination_closed"},
    {"action": "processing", "complete_after_s": 2, "final_status": "failed"},
    {"action": "processing", "complete_after_s": 3, "final_status": "paid"},
)
REFUND_OUTCOMES: tuple[Rule, ...] = (
    {"action": "decline", "code": "payment_not_refundable"},
    {"action": "processing", "complete_after_s": 2, "final_status": "succeeded"},
)
RECALL_OUTCOMES: tuple[Rule, ...] = (
    {"action": "processing", "complete_after_s": 2, "final_status": "failed", "code": "recall_rejected"},
)
LOOKUP_FAULTS: tuple[Rule, ...] = (
    {"action": "error_500_before_effect"},
    {"action": "rate_limit", "retry_after_s": 1},
    {"action": "malformed_body"},
    {"action": "delay_ms", "delay_ms": 1000},
    {"action": "not_found_for_s", "not_found_for_s": 3},
)
WEBHOOK_FAULTS: tuple[Rule, ...] = (
    {"action": "duplicate", "count": 2},
    {"action": "delay_ms", "delay_ms": 3000},
    {"action": "reorder"},
    {"action": "omit_event_id"},
    {"action": "tamper_amount"},
    {"action": "drop"},
    {"action": "bad_signature"},
)
OPERATIONS = {
    "payment": ("create_payment", ("get_payment", "list_payments")),
    "payout": ("create_payout", ("list_payouts",)),
    "recall": ("create_recall", ("list_recalls",)),
    "refund": ("refund_payment", ("get_refund", "list_refunds")),
}
OUTCOMES = {"payment": PAYMENT_OUTCOMES, "payout": PAYOUT_OUTCOMES, "recall": RECALL_OUTCOMES,
            "refund": REFUND_OUTCOMES}

# How often each kind of fault is chosen for one object.
P_CREATE_FAULT = 0.45
P_OUTCOME = 0.15
P_LOOKUP_FAULT = 0.2
P_WEBHOOK_FAULT = 0.35


def choose(rng: random.Random, subject: str, reference: str) -> list[Rule]:
    """The rules for one ``subject`` (``payment``, ``payout``, ``recall``, ``refund``) with this reference:
    at most one create fault or scripted outcome, one lookup fault and one webhook fault."""
    create, lookups = OPERATIONS[subject]
    rules: list[Rule] = []
    roll = rng.random()
    if roll < P_CREATE_FAULT:
        rules.append({"operation": create, **rng.choice(CREATE_FAULTS)})
    elif roll < P_CREATE_FAULT + P_OUTCOME:
        rules.append({"operation": create, **rng.choice(OUTCOMES[subject])})
    if rng.random() < P_LOOKUP_FAULT:
        rules.append({"operation": rng.choice(lookups), **rng.choice(LOOKUP_FAULTS)})
    if rng.random() < P_WEBHOOK_FAULT:
        rules.append({"operation": "webhook", **rng.choice(WEBHOOK_FAULTS)})
    return [{**rule, "client_reference": reference} for rule in rules]


def kind(rule: Rule) -> str:
    """How a rule is counted in the report: ``operation:action``."""
    return f"{rule['operation']}:{rule['action']}"


# Every read CardCo answers: what a lookup storm refuses (the rate limit is the account's, not
# one object's), and what a pause's slow provider delays.
LOOKUP_OPERATIONS = ("get_payment", "list_payments", "get_payment_method", "get_refund", "list_refunds",
                     "get_payout", "list_payouts", "list_recalls")
STORM_RETRY_AFTER_S = 2
# Long enough that a recovery pass or a payout send holds its lease for a while, short enough that
# a pass's reads fit its call budget.
SLOW_PROVIDER_MS = 800
SLOW_CREATES = ("create_payout", "create_recall", "refund_payment")


def storm() -> list[Rule]:
    """A 429 on every lookup ("account-wide 429 storms on lookups"), while installed."""
    return [{"operation": operation, "action": "rate_limit", "retry_after_s": STORM_RETRY_AFTER_S, "times": 0}
            for operation in LOOKUP_OPERATIONS]


def slow_provider() -> list[Rule]:
    """Every lookup and pipeline create answered late, so workers hold their leases for a while
    (the wave of a pause past a lease)."""
    return [{"operation": operation, "action": "delay_ms", "delay_ms": SLOW_PROVIDER_MS, "times": 0}
            for operation in (*LOOKUP_OPERATIONS, *SLOW_CREATES)]


def lost_payout_under_lag(reference: str, lag_s: float) -> tuple[list[Rule], list[Rule]]:
    """A payout whose create took effect but whose answer was lost, which CardCo then hides from
    its listings for ``lag_s`` and announces by no webhook: only the reconciler can find it, and
    only a lookup that began after its NotApplied cutoff may close it (seed 000, "Reconcile Before
    Any New Attempt"). The one-shot rule, and the rules that last ``lag_s``."""
    once = [{"operation": "create_payout", "action": "drop_response", "client_reference": reference}]
    lasting = [{"operation": operation, "action": "not_found_for_s", "not_found_for_s": lag_s,
                "client_reference": reference, "times": 0} for operation in ("get_payout", "list_payouts")]
    lasting.append({"operation": "webhook", "action": "drop", "client_reference": reference, "times": 0})
    return once, lasting


def listing_lag_edge_s(settings: dict[str, Any]) -> float:
    """The longest listing lag a correct gateway must tolerate, less a second: a payout sent at
    once may stay invisible until its NotApplied cutoff (send deadline, provider skew and
    visibility delay after the claim, gateway/domain/attempt_timing.py), and no longer."""
    visibility = max(float(settings.get("processing_allowance_s", 0)), float(settings.get("visibility_delay_s", 0)))
    return float(settings["payout_send_deadline_s"]) + float(settings["provider_skew_s"]) + visibility - 1.0
