"""The campaign's seeded choices: the disruption schedule every run gets, CardCo fault
rules CardCo accepts and that hit one object only, and the result document's exact shape."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from paygate_local.campaign import faults, load, schedule
from paygate_local.campaign.report import Result, table
from provider_fake.faults import FaultRule


@pytest.mark.parametrize("waves", [6, 8, 12, 40])
def test_every_run_kills_a_worker_a_web_process_and_the_clock_restarts_each_server_and_pauses_a_worker(
        waves: int) -> None:
    """A smaller run (--checkouts 300 --payouts 30) still kills at least one worker and one
    web process and restarts PostgreSQL and the broker once each; and a pause past a lease
    in every run, several in a run of 300 checkouts."""
    for seed in range(20):
        plan = schedule.plan(seed, waves)
        actions = Counter(d.action for d in plan)
        assert actions["restart-postgres"] == actions["restart-broker"] == max(1, waves // 20)
        assert actions["kill-clock"] >= 1 and actions["kill-web"] >= 1
        assert actions["kill-worker"] >= max(1, waves // 8)
        assert actions["pause-worker"] >= max(1, waves // 6)
        assert all(0 < d.wave < waves - 1 for d in plan)
        assert all(d.target in (1, 2) for d in plan)
        assert plan == sorted(plan) == schedule.plan(seed, waves)


@pytest.mark.parametrize("waves", [12, 13, 40])
def test_a_run_of_300_checkouts_has_every_fault_kind_and_the_default_run_each_twice(waves: int) -> None:
    """Scale: --checkouts 300 (12 waves) "includes at least one pause past a lease, one
    PostgreSQL crash (-m immediate), one broker outage and one sink outage, besides the kills and
    restarts"; the default run (40 waves) "includes every fault kind above at least twice", with
    both workers killed at once, and every sink fault reaches both sinks."""
    least = 2 if waves >= 40 else 1
    for seed in range(20):
        plan = schedule.plan(seed, waves)
        actions = Counter(d.action for d in plan)
        assert set(actions) == set(schedule.EVERY)
        assert min(actions.values()) >= least
        if waves >= 40:
            assert actions["pause-worker"] >= 3 and actions["kill-worker"] + 2 * actions["kill-workers"] >= 6
            for fault in schedule.SINK_FAULTS:
                assert {d.target for d in plan if d.action == fault} == {schedule.MERCHANT, schedule.ALERTS}


@pytest.mark.parametrize("waves", [6, 12, 40])
def test_server_disruptions_have_a_wave_each_and_a_pause_shares_none_with_them_or_a_worker_kill(waves: int) -> None:
    """A pause past a lease needs PostgreSQL up and its worker alive; two servers down at once
    would blur which outage a failure belongs to."""
    for seed in range(20):
        plan = schedule.plan(seed, waves)
        servers = [d.wave for d in plan if d.action in schedule.SERVER]
        assert len(servers) == len(set(servers))
        paused = {d.wave for d in plan if d.action == "pause-worker"}
        assert not paused & set(servers)
        assert not paused & {d.wave for d in plan if d.action in ("kill-worker", "kill-workers")}


def test_outages_last_ten_seconds_or_more_and_storms_tens_of_seconds() -> None:
    """An outage of 10 s or more (PostgreSQL, the broker); "429 storms on lookups
    lasting tens of seconds"; sinks down "long enough that some rows dead-letter" (the campaign's
    5 failures with 1, 2, 4, 8 s of back-off take about 15 s)."""
    plan = [d for seed in range(50) for d in schedule.plan(seed, 40)]
    for d in plan:
        if d.action in ("outage-postgres", "outage-broker"):
            assert d.duration_s >= 10
        if d.action == "lookup-storm":
            assert d.duration_s >= 20
        if d.action in schedule.SINK_FAULTS:
            assert d.duration_s >= 15


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


def test_the_rules_that_outlast_a_request_are_valid_cardco_rules() -> None:
    """A storm is "times: 0" on every lookup, a pause's slow provider delays every lookup
    and pipeline create, and a lost payout under listing lag is a dropped create answer, lookups
    that miss it for the lag and no webhook, all bound to its reference."""
    storm = faults.storm()
    assert {r["operation"] for r in storm} == set(faults.LOOKUP_OPERATIONS)
    assert all(r["action"] == "rate_limit" and r["times"] == 0 and "client_reference" not in r for r in storm)
    once, lasting = faults.lost_payout_under_lag("P-1-a1", 16.0)
    assert once == [{"operation": "create_payout", "action": "drop_response", "client_reference": "P-1-a1"}]
    assert all(r["client_reference"] == "P-1-a1" and r["times"] == 0 for r in lasting)
    assert {r["operation"] for r in lasting} == {"get_payout", "list_payouts", "webhook"}
    for rule in storm + faults.slow_provider() + once + lasting:
        FaultRule.model_validate(rule)


def test_the_listing_lag_is_the_notapplied_cutoff_less_a_second() -> None:
    """Seed 000, "Reconcile Before Any New Attempt": a payout sent at once may stay unlisted until
    its send deadline, the provider's skew and its visibility delay have passed."""
    settings = {"payout_send_deadline_s": 10, "provider_skew_s": 5, "processing_allowance_s": 2}
    assert faults.listing_lag_edge_s(settings) == 16.0
    assert faults.listing_lag_edge_s({**settings, "visibility_delay_s": 4}) == 18.0


def test_the_json_document_has_exactly_the_issues_keys_and_the_table_names_the_reproducing_seed() -> None:
    """The report's keys: what fired, the outcomes, the escalations by reason, the
    pauses past a lease and the outages."""
    result = Result(seed=7, checkouts=300, payouts=30, operations={"checkout:succeed": 90},
                    faults={"create_payment:drop_response": 4}, kills={"worker": 2}, restarts={"postgres": 1},
                    violations={"one-payment-per-order": ["order C7-1: 2 payments took effect"],
                                "outbox-not-stranded": []}, wall_s=88.04, notes={"http-requests": 1000},
                    faults_fired={"create_payment:drop_response": 3},
                    outcomes={"checkouts": {"Paid": 80, "Open": 10}, "payouts": {"Paid": 30}},
                    escalations={"deadline": 2}, pauses={"worker.1": 2},
                    outages={"postgres": {"restarts": 3, "crashes": 1, "down_s": 12.5}})
    assert result.document() == {
        "seed": 7, "operations": {"checkout:succeed": 90}, "faults": {"create_payment:drop_response": 4},
        "kills": {"worker": 2, "web": 0, "clock": 0}, "restarts": {"postgres": 1, "broker": 0},
        "violations": {"one-payment-per-order": 1, "outbox-not-stranded": 0}, "wall_s": 88.0,
        "faults_fired": {"create_payment:drop_response": 3},
        "outcomes": {"checkouts": {"Open": 10, "Paid": 80}, "payouts": {"Paid": 30}}, "escalations": {"deadline": 2},
        "pauses": {"worker.1": 2}, "outages": {"postgres": {"restarts": 3, "crashes": 1, "down_s": 12.5}}}
    text = table(result)
    assert "order C7-1: 2 payments took effect" in text
    assert text.endswith("FAILED: 1 violations. Reproduce with: paygate campaign --seed 7 --checkouts 300 --payouts 30")


def test_a_racing_cancellation_is_spread_over_the_span_between_the_attempts_insert_and_its_start() -> None:
    """Seed 004 "Cancellation goes through the same lock": the cancellations that race a payment
    are sent a seeded few milliseconds after it, so some land between the attempt's insert and
    its Started write (where the lock decides); the other checkouts cancel nothing."""
    chosen = load.checkouts(random.Random(3), "t", 300, ["cardco:acct:test"], refunds=True)
    delays = [c.cancel_after_s for c in chosen if c.kind == "cancel-race"]
    assert len(delays) >= 30 and len(set(delays)) > len(delays) // 2
    assert all(load.CANCEL_AFTER_S[0] <= d <= load.CANCEL_AFTER_S[1] for d in delays)
    assert all(c.cancel_after_s == 0.0 for c in chosen if c.kind != "cancel-race")
    assert chosen == load.checkouts(random.Random(3), "t", 300, ["cardco:acct:test"], refunds=True)
