"""The attempt kinds are registered once (gateway.domain.attempt_kinds): every table kept per kind
is derived from the registry, with exactly its kinds, and every stored or exposed name is what it
was (seed 001: an effect record names its kind; escalation keys, outbox job kinds and metric labels
are in the database and on dashboards)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway import instruments
from gateway.domain import attempt_kinds, effect_protocol
from gateway.domain.attempt_kinds import KINDS, Kind, named, pipeline_kinds
from gateway.effects.ledger import escalation_key
from gateway.http import metrics
from gateway.http.api_shapes import SHAPES
from gateway.providers.cardco.adapter import OPERATIONS as CARDCO_OPERATIONS
from gateway.reconciliation import runs
from gateway.refunds.attempts import REFUND
from gateway.store import gauges

PIPELINE = {kind.name for kind in pipeline_kinds()}


def test_the_stored_names_are_unchanged() -> None:
    assert [(k.name, k.escalation_prefix, k.attempts, k.sent_at, k.job_kind) for k in KINDS] == [
        ("payment", "attempt", "payment_attempts", "first_sent_at", None),
        ("payout", "payout-attempt", "payout_attempts", "started_at", "payout-job"),
        ("payout_recall", "payout-recall-attempt", "payout_recall_attempts", "started_at", "payout-recall-job"),
        ("payment_refund", "payment-refund-attempt", "payment_refund_attempts", "started_at", "payment-refund-job"),
    ]
    assert escalation_key("payout_recall", "a1", "deadline") == "payout-recall-attempt:a1:deadline"
    assert [(k.provider_id, k.grants, k.grant_operation, k.escalation_family, k.escalation_reasons)
            for k in KINDS] == [
        ("provider_payment_id", None, None, None, ()),
        ("provider_payout_id", "payout_grants", "payout.submit", "payout-", ()),
        ("provider_recall_id", "payout_recall_grants", "payout.recall", "payout-recall-", ()),
        ("provider_refund_id", "payment_refund_grants", "payment.refund", "payment-refund-",
         ("payment-refund-", "refund-owed")),
    ]


CAPTURE = Kind("payment_capture", "payment-capture-attempt", "payment_capture_attempts", "payment-capture-job",
               provider_id="provider_capture_id", grants="payment_capture_grants", grant_operation="payment.capture",
               escalation_family="payment-capture-")


def test_a_new_kind_appears_in_every_composed_statement() -> None:
    """A kind added to the registry is read by the grants gauges, the open escalations' kind and a
    reconciliation run's missing attempts, with no statement edited."""
    registry = (*KINDS, CAPTURE)
    grants = gauges.grant_gauges(registry).as_string(None)
    assert "('payment.capture')" in grants and grants.count('FROM "payment_capture_grants"') == 2
    assert "payment_capture" not in gauges.grant_gauges(KINDS).as_string(None)
    escalations = gauges.open_escalations(registry).as_string(None)
    assert "starts_with(escalation_key, 'payment-capture-') THEN 'payment_capture'" in escalations
    unlisted = runs.unlisted_succeeded(registry).as_string(None)
    assert """SELECT 'payment_capture'::text AS kind, attempt_id, "provider_capture_id" AS provider_id""" in unlisted
    assert 'FROM "payment_capture_attempts"' in unlisted


def test_the_most_specific_escalation_family_is_tested_first() -> None:
    """A payout recall's key also starts with ``payout-``: its WHEN comes before the payout's."""
    order = [kind.name for kind in attempt_kinds.escalating_kinds((*KINDS, CAPTURE))]
    assert order.index("payout_recall") < order.index("payout") and "payment" not in order
    escalations = gauges.OPEN_ESCALATIONS.as_string(None)
    assert escalations.index("'payout-recall-'") < escalations.index("'payout-')")


def test_every_derived_table_has_exactly_the_registered_kinds() -> None:
    assert set(effect_protocol.CONSISTENT) == {kind.name for kind in KINDS}
    assert set(metrics.UNKNOWN_AGES) == {kind.name for kind in KINDS}
    assert instruments.PIPELINE_KINDS == tuple(kind.name for kind in pipeline_kinds())
    assert metrics.JOB_KINDS == {kind.job: kind.name for kind in pipeline_kinds()}
    assert set(CARDCO_OPERATIONS) == {kind.name for kind in KINDS}, "CardCo supports every kind"
    pipeline_gauges, unknown_ages = gauges.PIPELINE_GAUGES.as_string(None), gauges.UNKNOWN_AGES.as_string(None)
    for kind in KINDS:
        assert (f"'{kind.name}'::text" in pipeline_gauges) is kind.pipeline
        assert f"'{kind.name}'::text" in unknown_ages and f'"{kind.sent_at}"' in unknown_ages


def test_the_metric_names_and_labels_are_unchanged() -> None:
    assert instruments.PIPELINE_KINDS == ("payout", "payout_recall", "payment_refund")
    assert metrics.UNKNOWN_AGES == {"payout": "paygate_payout_unknown_attempt_age_seconds",
                                    "payout_recall": "paygate_payout_unknown_attempt_age_seconds",
                                    "payment_refund": "paygate_payout_unknown_attempt_age_seconds",
                                    "payment": "paygate_payment_unknown_attempt_age_seconds"}


def test_a_pipeline_kind_claimed_before_started_and_checkout_not() -> None:
    """Seed 001's protocol table: a pipeline attempt is Claimed at INTENT_PERSISTED, a checkout one NotStarted."""
    persisted = effect_protocol.ProtocolState.INTENT_PERSISTED
    assert {name: states[persisted] for name, states in effect_protocol.CONSISTENT.items()} == {
        "payment": {"NotStarted"}, "payout": {"Claimed"}, "payout_recall": {"Claimed"}, "payment_refund": {"Claimed"}}


def test_a_name_no_kind_has_is_refused() -> None:
    extra = Kind("payment_capture", "payment-capture-attempt", "payment_capture_attempts", "payment-capture-job")
    assert named("payment_capture", (*KINDS, extra)) is extra and extra in pipeline_kinds((*KINDS, extra))
    with pytest.raises(KeyError):
        named("payment_capture")
    with pytest.raises(ValueError, match="not started by an outbox job"):
        _ = attempt_kinds.PAYMENT.job


def test_a_pipeline_description_must_name_a_registered_pipeline_kind() -> None:
    with pytest.raises(KeyError):
        replace(REFUND, name="payment_capture")
    with pytest.raises(ValueError, match="not a kind of the attempt pipeline"):
        replace(REFUND, name="payment")


def test_the_api_shapes_enumerate_the_registered_kinds_as_before() -> None:
    """API.md is a fixed contract: the kinds the Overview and a run's findings name are the registry's,
    in the order the served document always had."""
    findings = SHAPES["ReconciliationRunFindings"]["allOf"][1]["properties"]["findings"]["items"]
    assert findings["properties"]["kind"]["enum"] == ["payment", "payment_refund", "payout", "payout_recall"]
    unknown = SHAPES["Overview"]["properties"]["unknown_attempts"]["items"]
    assert unknown["properties"]["kind"]["enum"] == ["payment", "payout", "payout_recall", "payment_refund"]
