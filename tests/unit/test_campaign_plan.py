"""The campaign's seeded choices (issue 12): the disruption schedule every run gets, CardCo fault
rules CardCo accepts and that hit one object only, and the result document's exact shape."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway.campaign import faults, schedule
from gateway.campaign.report import Result, table
from provider_fake.faults import FaultRule


@pytest.mark.parametrize("waves", [6, 8, 12, 40])
def test_every_run_kills_a_worker_a_web_process_and_the_clock_and_restarts_each_server_once(waves: int) -> None:
    """Issue 12: "A smaller run (--checkouts 300 --payouts 30) still kills at least one worker and one
    web process and restarts PostgreSQL and the broker once each"."""
    for seed in range(20):
        plan = schedule.plan(seed, waves)
        actions = Counter(d.action for d in plan)
        assert actions["restart-postgres"] == actions["restart-broker"] == actions["kill-clock"] == 1
        assert actions["kill-worker"] >= max(1, waves // 8) and actions["kill-web"] >= 1
        assert all(0 < d.wave < waves - 1 and d.target in (1, 2) for d in plan)
        restarts = [d.wave for d in plan if d.action.startswith("restart")]
        assert len(set(restarts)) == 2
        assert plan == sorted(plan) == schedule.plan(seed, waves)


def test_a_run_too_short_for_its_disruptions_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 6 waves"):
        schedule.plan(1, 5)


def test_fault_rules_are_valid_cardco_rules_bound_to_their_reference_and_cover_the_control_api() -> None:
    rng = random.Random(3)
    seen: Counter[str] = Counter()
    for n in range(3000):
        subject = ("payment", "payout", "recall", "refund")[n % 4]
        for rule in faults.choose(rng, subject, f"REF-{n}-a1"):
            FaultRule.model_validate(rule)  # CardCo refuses an action that does not fit its operation
            assert rule["client_reference"] == f"REF-{n}-a1" and "times" not in rule
            seen[rule["action"]] += 1
    every = {r["action"] for r in faults.CREATE_FAULTS + faults.PAYMENT_OUTCOMES + faults.WEBHOOK_FAULTS}
    assert every <= set(seen)


def test_the_json_document_has_exactly_the_issues_keys_and_the_table_names_the_reproducing_seed() -> None:
    """Issue 12's keys, and issue 22's: what fired, the outcomes, the escalations by reason."""
    result = Result(seed=7, checkouts=300, payouts=30, operations={"checkout:succeed": 90},
                    faults={"create_payment:drop_response": 4}, kills={"worker": 2}, restarts={"postgres": 1},
                    violations={"one-payment-per-order": ["order C7-1: 2 payments took effect"],
                                "outbox-not-stranded": []}, wall_s=88.04, notes={"http-requests": 1000},
                    faults_fired={"create_payment:drop_response": 3},
                    outcomes={"checkouts": {"Paid": 80, "Open": 10}, "payouts": {"Paid": 30}},
                    escalations={"deadline": 2})
    assert result.document() == {
        "seed": 7, "operations": {"checkout:succeed": 90}, "faults": {"create_payment:drop_response": 4},
        "kills": {"worker": 2, "web": 0, "clock": 0}, "restarts": {"postgres": 1, "broker": 0},
        "violations": {"one-payment-per-order": 1, "outbox-not-stranded": 0}, "wall_s": 88.0,
        "faults_fired": {"create_payment:drop_response": 3},
        "outcomes": {"checkouts": {"Open": 10, "Paid": 80}, "payouts": {"Paid": 30}}, "escalations": {"deadline": 2}}
    text = table(result)
    assert "order C7-1: 2 payments took effect" in text
    assert text.endswith("FAILED: 1 violations. Reproduce with: paygate campaign --seed 7 --checkouts 300 --payouts 30")
