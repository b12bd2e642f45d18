"""The campaign's invariants (issue 12, "checks, against CardCo's ledger and request log and the
gateway's API and database"), each shown holding and shown violated on a small snapshot."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.campaign import invariants
from gateway.campaign.invariants import Snapshot

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
ACCOUNT = "cardco:acct_store:test"


def _payment(reference: str, status: str = "succeeded", pid: str = "pay_1") -> dict[str, Any]:
    return {"id": pid, "account": ACCOUNT, "client_reference": reference, "status": status}


def _attempt(reference: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"attempt_id": f"att-{reference}", "provider_account": ACCOUNT, "client_reference": reference,
            "state": state, "escalation_deadline": NOW - timedelta(seconds=5), "lease_expires_at": None, **extra}


def _escalation(key: str, resolved: bool = False, **details: Any) -> dict[str, Any]:
    return {"escalation_key": key, "attempt_id": None, "reason": "deadline", "details": details,
            "resolved_at": NOW if resolved else None}


def _request(key: str, body: bytes, path: str = "/v1/payments") -> dict[str, Any]:
    return {"method": "POST", "path": path, "body_base64": base64.b64encode(body).decode(),
            "headers": {"idempotency-key": key, "cardco-account": ACCOUNT}}


def _outbox(message_id: int, key: str, ordering: str | None = "attempt:1", **extra: Any) -> dict[str, Any]:
    return {"message_id": message_id, "dedup_key": key, "ordering_key": ordering, "kind": "order-confirmation",
            "dispatched_at": NOW, "dead_lettered_at": None, "next_attempt_at": NOW - timedelta(minutes=1), **extra}


def _sink(key: str, **payload: Any) -> dict[str, Any]:
    return {"dedup_key": key, "kind": "order-confirmation", "payload": payload or {"dedup_key": key}}


def _delivery(event_id: str | None, state: str = "delivered", n: int = 1) -> dict[str, Any]:
    body = {"type": "payment.succeeded", "data": {"object": {"id": "pay_1"}}}
    if event_id:
        body["id"] = event_id
    return {"delivery_id": f"dlv_{n}", "event_id": event_id or f"evt_hidden_{n}", "type": "payment.succeeded",
            "account": ACCOUNT, "state": state, "body": json.dumps(body)}


def _notification(event_id: str | None, attempt_id: str | None = "att-1", **detail: Any) -> dict[str, Any]:
    return {"event_id": 7, "provider_account": ACCOUNT, "notification_key": event_id, "attempt_id": attempt_id,
            "detail": {"provider_event_id": event_id, **detail}, "applied_later": False}


def test_two_effective_payments_for_one_order_are_a_violation_a_decline_beside_one_is_not() -> None:
    holds = Snapshot(NOW, ledger_payments=[_payment("ORD-1-a1", "failed"), _payment("ORD-1-a2")])
    broken = Snapshot(NOW, ledger_payments=[_payment("ORD-1-a1"), _payment("ORD-1-a2", "refunded", "pay_2")])
    assert invariants.one_payment_per_order(holds) == []
    assert invariants.one_payment_per_order(broken) == ["order ORD-1: 2 payments took effect"]


def test_an_order_refunded_twice_is_a_violation() -> None:
    refunds = [{**_payment("ORD-1-r1", "succeeded", "re_1")}, {**_payment("ORD-1-r2", "failed", "re_2")}]
    assert invariants.one_refund_per_order(Snapshot(NOW, ledger_refunds=refunds)) == []
    refunds[1]["status"] = "succeeded"
    assert invariants.one_refund_per_order(Snapshot(NOW, ledger_refunds=refunds)) == ["order ORD-1: refunded 2 times"]


def test_a_payout_paid_twice_is_a_violation() -> None:
    paid = [{**_payment("PAY-1-a1", "paid"), "id": "po_1"}, {**_payment("PAY-1-a2", "returned"), "id": "po_2"}]
    assert invariants.one_payout_per_payout(Snapshot(NOW, ledger_payouts=paid[:1])) == []
    assert invariants.one_payout_per_payout(Snapshot(NOW, ledger_payouts=paid)) == ["payout PAY-1: paid 2 times"]


def test_a_resend_under_the_original_key_must_carry_the_same_bytes() -> None:
    same = Snapshot(NOW, requests=[_request("k1", b'{"a":1}'), _request("k1", b'{"a":1}'), _request("k2", b"{}")])
    drifted = Snapshot(NOW, requests=[_request("k1", b'{"a":1}'), _request("k1", b'{"a": 1}')])
    assert invariants.resends_byte_identical(same) == []
    assert invariants.resends_byte_identical(drifted) == [f"/v1/payments key k1 ({ACCOUNT}): 2 different bodies"]


def test_an_unresolved_attempt_is_a_violation_unless_unknown_past_its_deadline_with_an_open_escalation() -> None:
    escalated = _attempt("ORD-1-a1", "Unknown")
    early = _attempt("ORD-2-a1", "Unknown", escalation_deadline=NOW + timedelta(seconds=30))
    started = _attempt("ORD-3-a1", "Started")
    stalled = _attempt("ORD-5-a1", "Started")  # seed 004: recovery treats a stalled Started as Unknown
    s = Snapshot(NOW, payment_attempts=[escalated, early, started, _attempt("ORD-4-a1", "Succeeded"), stalled],
                 escalations=[_escalation("attempt:att-ORD-1-a1:deadline"), _escalation("attempt:att-ORD-2-a1:x"),
                              _escalation("attempt:att-ORD-5-a1:resend-not-safe:order-not-payable")])
    assert invariants.attempts_resolved(s) == ["payment attempt ORD-2-a1 (att-ORD-2-a1) is Unknown",
                                               "payment attempt ORD-3-a1 (att-ORD-3-a1) is Started"]
    resolved = Snapshot(NOW, payout_attempts=[escalated, _attempt("PAY-1-a1", "NotStarted")],
                        refund_attempts=[_attempt("ORD-5-r1", "Claimed")],
                        escalations=[_escalation("x", resolved=True, attempt_id="att-ORD-1-a1")])
    assert invariants.attempts_resolved(resolved) == ["payout attempt ORD-1-a1 (att-ORD-1-a1) is Unknown",
                                                      "refund attempt ORD-5-r1 (att-ORD-5-r1) is Claimed"]


def test_a_grant_that_lapsed_unused_needs_an_escalation_naming_its_payout_or_order() -> None:
    payouts = [{"payout_id": f"PAY-{n}", "state": "Approved"} for n in range(1, 5)] + [
        {"payout_id": "PAY-5", "state": "Paid"}]
    lapsed = NOW - timedelta(seconds=1)
    grants = [{"owner": "PAY-1", "state": "Issued", "expires_at": NOW + timedelta(seconds=9)},
              {"owner": "PAY-2", "state": "Issued", "expires_at": lapsed},
              {"owner": "PAY-3", "state": "Expired", "expires_at": lapsed},
              {"owner": "PAY-4", "state": "Consumed", "expires_at": lapsed},
              {"owner": "PAY-5", "state": "Expired", "expires_at": lapsed}]
    orders = [{"order_id": "ORD-1", "state": "Paid"}, {"order_id": "ORD-2", "state": "Refunded"}]
    refund_grants = [{"owner": "ORD-1", "state": "Expired", "expires_at": lapsed},
                     {"owner": "ORD-2", "state": "Expired", "expires_at": lapsed}]
    s = Snapshot(NOW, payouts=payouts, grants=grants, orders=orders, refund_grants=refund_grants)
    assert invariants.grants_used_or_escalated(s) == [
        "payout PAY-2: its grant lapsed unused and nobody was told",
        "payout PAY-3: its grant lapsed unused and nobody was told",
        "refund of order ORD-1: its grant lapsed unused and nobody was told"]
    told = [_escalation(f"grant:{n}:expired", owner=n) for n in ("PAY-2", "PAY-3", "ORD-1")]
    s = Snapshot(NOW, payouts=payouts, grants=grants, orders=orders, refund_grants=refund_grants, escalations=told)
    assert invariants.grants_used_or_escalated(s) == []


def test_failed_or_not_applied_while_cardco_holds_the_money_is_a_violation() -> None:
    ledger = [_payment("ORD-1-a1"), _payment("ORD-2-a1", "failed", "pay_2"), _payment("ORD-3-a1", pid="pay_3")]
    attempts = [_attempt("ORD-1-a1", "NotApplied"), _attempt("ORD-2-a1", "Failed")]
    assert invariants.no_false_negative(Snapshot(NOW, ledger_payments=ledger, payment_attempts=attempts)) == [
        "ORD-1-a1: NotApplied while CardCo holds pay_1 (succeeded)",
        "ORD-3-a1: CardCo holds pay_3, the gateway has no attempt"]


def test_a_succeeded_payment_needs_a_paid_order_and_a_paid_order_needs_its_payment() -> None:
    ledger = [_payment("ORD-1-a2"), _payment("ORD-2-a1", "refunded", "pay_2"), _payment("ORD-3-a1", pid="pay_3"),
              _payment("ORD-5-a1", pid="pay_5"), _payment("ORD-6-a1", pid="pay_6"), _payment("ORD-7-a1", "refunded")]
    orders = [{"order_id": "ORD-1", "state": "Paid"}, {"order_id": "ORD-2", "state": "Refunded"},
              {"order_id": "ORD-3", "state": "Cancelled"}, {"order_id": "ORD-4", "state": "Paid"},
              {"order_id": "ORD-5", "state": "PaidAfterCancel"}, {"order_id": "ORD-6", "state": "PaidAfterCancel"},
              {"order_id": "ORD-7", "state": "Paid"}]
    owed = [_escalation("order:ORD-5:refund-owed", order_id="ORD-5")]
    assert invariants.orders_match_ledger(Snapshot(NOW, ledger_payments=ledger, orders=orders, escalations=owed)) == [
        "order ORD-3 is Cancelled while CardCo's payment is succeeded",
        "order ORD-6 is PaidAfterCancel while CardCo's payment is succeeded",
        "order ORD-7 is Paid while CardCo's payment is refunded",
        "order ORD-4 is Paid but CardCo holds no payment for it"]


def test_a_payment_that_succeeded_after_an_accepted_cancellation_is_refunded_or_escalated() -> None:
    ledger = [_payment("ORD-1-a1"), _payment("ORD-2-a1", "refunded", "pay_2"), _payment("ORD-3-a1", pid="pay_3"),
              _payment("ORD-4-a1", pid="pay_4")]
    orders = [{"order_id": "ORD-1", "state": "Paid"}, {"order_id": "ORD-2", "state": "Refunded"},
              {"order_id": "ORD-3", "state": "PaidAfterCancel"}, {"order_id": "ORD-4", "state": "Paid"}]
    s = Snapshot(NOW, ledger_payments=ledger, orders=orders, cancelled_orders=frozenset({"ORD-1", "ORD-2", "ORD-3"}),
                 escalations=[_escalation("order:ORD-3:refund-owed", order_id="ORD-3")])
    assert invariants.cancellations_respected(s) == [
        "order ORD-1: cancellation accepted, CardCo's pay_1 stays succeeded, the order is Paid"]


def test_every_dispatched_effect_reaches_the_sink_and_a_key_never_carries_two_payloads() -> None:
    outbox = [_outbox(1, "attempt:1:order-confirmation"), _outbox(2, "attempt:2:order-confirmation"),
              _outbox(3, "alert:1", ordering=None, kind="operator-alert")]
    sink = [_sink("attempt:1:order-confirmation"), _sink("attempt:1:order-confirmation"),
            _sink("attempt:9:x", v=1), _sink("attempt:9:x", v=2)]
    attempts = [{**_attempt("ORD-1-a1", "Succeeded"), "attempt_id": "1"}, _attempt("ORD-2-a1", "Succeeded")]
    s = Snapshot(NOW, outbox=outbox, sink=sink, payment_attempts=attempts)
    assert invariants.sink_once_per_dedup_key(s) == [
        "payment attempt ORD-2-a1 succeeded, no merchant effect was written",
        "outbox 2 (attempt:2:order-confirmation) dispatched, never received", "attempt:9:x: 2 different payloads"]
    assert invariants.sink_redeliveries(s) == 2


def test_effects_of_one_ordering_key_arrive_in_the_order_they_were_written() -> None:
    outbox = [_outbox(1, "a"), _outbox(2, "b"), _outbox(3, "c", ordering="attempt:2")]
    assert invariants.sink_in_order(Snapshot(NOW, outbox=outbox, sink=[_sink("c"), _sink("a"), _sink("b")])) == []
    assert invariants.sink_in_order(Snapshot(NOW, outbox=outbox, sink=[_sink("b"), _sink("a"), _sink("a")])) == [
        "attempt:1: effects received out of order"]


def test_an_acknowledged_webhook_is_stored_and_applied_or_escalated() -> None:
    deliveries = [_delivery("evt_1"), _delivery("evt_2"), _delivery("evt_3"), _delivery("evt_4", state="failed"),
                  _delivery(None, n=5), _delivery(None, n=6)]
    notifications = [_notification("evt_1", attempt_id=None, refund_attempt_id="r-1"),
                     _notification("evt_2", attempt_id=None, escalation_key="unmatched:1"),
                     _notification(None, attempt_id=None)]
    s = Snapshot(NOW, deliveries=deliveries, notifications=notifications, escalations=[_escalation("unmatched:1")])
    assert invariants.webhooks_accounted(s) == [
        "2 webhooks without an event id acknowledged, 1 stored",
        "evt_3 (payment.succeeded): acknowledged, not stored",
        "notification 7: stored, neither applied nor escalated"]


def test_an_outbox_row_long_past_due_is_stranded_a_dead_letter_is_not() -> None:
    outbox = [_outbox(1, "a", dispatched_at=None), _outbox(2, "b", dispatched_at=None, dead_lettered_at=NOW),
              _outbox(3, "c", dispatched_at=None, next_attempt_at=NOW - timedelta(seconds=2))]
    assert invariants.outbox_not_stranded(Snapshot(NOW, outbox=outbox)) == [
        "outbox 1 (order-confirmation, a) due 13:59:00"]


def test_an_unresolved_attempt_held_by_a_lease_that_expired_long_ago_is_a_violation() -> None:
    stale = _attempt("ORD-1-a1", "Unknown", lease_expires_at=NOW - timedelta(minutes=1))
    live = _attempt("ORD-2-a1", "Unknown", lease_expires_at=NOW + timedelta(seconds=5))
    done = _attempt("ORD-3-a1", "Succeeded", lease_expires_at=NOW - timedelta(minutes=1))
    assert invariants.no_lease_past_expiry(Snapshot(NOW, payment_attempts=[stale, live, done])) == [
        "payment attempt ORD-1-a1: lease expired 13:59:00, still held"]


def test_an_empty_run_violates_nothing_and_every_invariant_is_reported() -> None:
    checked = invariants.check(Snapshot(NOW))
    assert set(checked) == set(invariants.CHECKS) and not any(checked.values())
