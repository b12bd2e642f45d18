"""Which CardCo faults one checkout, payout or recall meets (issue 12: "CardCo faults chosen at
random per request from the whole control API").

Each choice is a list of CardCo fault rules (API.md, "CardCo control API") bound to the object's
client reference, so they hit that object only; a rule without ``times`` applies to the first
matching request (the first send, the first lookup, the first webhook), so a resend or a later
lookup meets a working provider, as after a real incident. Choices come from the campaign's
seeded ``random.Random`` only.
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
