"""Pure payout rules moved out of handlers: approval (API.md "Authentication": a clerk of
the tenant, not the requester, whose limit covers the amount), terms binding (seed 000, "Bind the
Exact Payout Before Policy"), recall reasons (docs/decisions/0015) and grant checks (seed 000, "The
Worker Validation Pipeline", in its order)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.domain.grants import NotYetValid, check_grant
from gateway.domain.payout_approval import Clerk, approval_refusal, who_may_act
from gateway.domain.payout_terms import unbound_terms
from gateway.domain.recall_policy import recall_outcome, recall_reason

NOW = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)


def test_the_requester_cannot_approve_and_the_approver_limit_must_cover_the_amount() -> None:
    assert approval_refusal(approver_id="clerk-22", approver_limit_minor=10**9, requester_id="clerk-22",
                            amount_minor=425_000) == "the requester cannot approve their own payout"
    assert approval_refusal(approver_id="approver-7", approver_limit_minor=425_000 - 1, requester_id="clerk-22",
                            amount_minor=425_000) == "the approver's limit does not cover the amount"
    assert approval_refusal(approver_id="approver-7", approver_limit_minor=None, requester_id="clerk-22",
                            amount_minor=1) == "the approver's limit does not cover the amount"
    assert approval_refusal(approver_id="approver-7", approver_limit_minor=425_000, requester_id="clerk-22",
                            amount_minor=425_000) is None


def test_who_may_act_on_a_payout_waiting_for_a_person_follows_the_endpoints_rules() -> None:
    """Who may act: acknowledgment by any clerk of the tenant; approval
    only by one the approve endpoint would accept (not the requester, limit covering the amount)."""
    clerks = [Clerk("clerk-22", 10**9), Clerk("approver-7", 425_000), Clerk("junior-1", 424_999), Clerk("nolimit", None)]
    approve = who_may_act(outcome="EscalationRecommended", requester_id="clerk-22", amount_minor=425_000, clerks=clerks)
    assert approve is not None and (approve.action, approve.clerks) == ("approve", ("approver-7",))
    acknowledge = who_may_act(outcome="AcknowledgmentRequired", requester_id="clerk-22", amount_minor=425_000,
                              clerks=clerks)
    assert acknowledge is not None and acknowledge.action == "acknowledge"
    assert acknowledge.clerks == ("approver-7", "clerk-22", "junior-1", "nolimit")
    nobody = who_may_act(outcome="EscalationRecommended", requester_id="clerk-22", amount_minor=10**10, clerks=clerks)
    assert nobody is not None and nobody.clerks == ()
    assert who_may_act(outcome="Denied", requester_id="clerk-22", amount_minor=1, clerks=clerks) is None


def test_a_submit_body_binds_only_when_it_states_the_record_s_terms() -> None:
    record = {"payout_id": "PAY-3107", "beneficiary_id": "BEN-2208", "destination_id": "DST-77",
              "amount_minor": 425_000, "currency": "EUR", "purpose": "p", "release_at": NOW}
    assert unbound_terms(record, {"amount_minor": 425_000, "currency": "EUR"}, None) == []
    assert unbound_terms(record, {"amount_minor": 425_001, "currency": "USD"}, None) == ["amount_minor", "currency"]
    assert unbound_terms(record, {}, "PAY-9999") == ["payout_id"]
    assert unbound_terms(record, {}, "PAY-3107") == []


@pytest.mark.parametrize(("recalled", "paid", "policy", "reason", "outcome"), [
    (True, {"provider_status": "paid", "provider_payout_id": "po_1"}, "v", "recall.already-recalled", "Denied"),
    (False, {"provider_status": "returned", "provider_payout_id": "po_1"}, "v", "recall.payout-not-paid", "Denied"),
    (False, {"provider_status": "paid", "provider_payout_id": "po_1"}, None, "context.unavailable", "Deferred"),
    (False, None, "v", "context.unavailable", "Deferred"),
    (False, {"provider_status": "paid", "provider_payout_id": None}, "v", "context.unavailable", "Deferred"),
    (False, {"provider_status": "paid", "provider_payout_id": "po_1"}, "v", "recall.allowed", "Allowed"),
])
def test_the_recall_reason_and_outcome(recalled: bool, paid: dict[str, Any] | None, policy: str | None,
                                       reason: str, outcome: str) -> None:
    found = recall_reason(already_recalled=recalled, paid_attempt=paid, policy_version=policy)
    assert (found, recall_outcome(found)) == (reason, outcome)


def _grant(**changes: Any) -> dict[str, Any]:
    return {"payout_id": "PAY-3107", "operation": "payout.submit", "audience": "payout-executor",
            "state": "Issued", "not_before": NOW - timedelta(minutes=1), "expires_at": NOW + timedelta(minutes=29),
            **changes}


@pytest.mark.parametrize(("changes", "expected"), [
    ({"payout_id": "PAY-1"}, "binding.mismatch"),
    ({"audience": "payout-recall-executor"}, "presenter.not-audience"),
    ({"operation": "payout.recall"}, "presenter.not-audience"),
    ({"state": "Revoked"}, "grant.revoked"),
    ({"state": "Consumed"}, "grant.consumed"),
    ({"state": "Expired"}, "grant.expired"),
    ({"expires_at": NOW}, "grant.expired"),
    ({"not_before": NOW + timedelta(seconds=1)}, NotYetValid(NOW + timedelta(seconds=1))),
    ({}, None),
    # The seed's order: a grant wrong in several ways is refused for the first check it fails.
    ({"payout_id": "PAY-1", "state": "Consumed", "expires_at": NOW}, "binding.mismatch"),
    ({"state": "Revoked", "expires_at": NOW}, "grant.revoked"),
])
def test_grant_checks_in_the_seed_s_order(changes: dict[str, Any], expected: object) -> None:
    assert check_grant(_grant(**changes), subject_id="PAY-3107", subject_field="payout_id",
                       operation="payout.submit", audiences={"payout-executor"}, now=NOW) == expected
