"""The campaign's invariants ("checks, against CardCo's ledger and request log and the
gateway's API and database", and evidence the gateway does not write: docs/decisions/0055), each shown holding
and shown violated (a planted violation) on a small snapshot."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.domain.certificates import CERTIFICATE_VERSION, public_key_of, sign
from paygate_local.campaign import invariants
from paygate_local.campaign.invariants import Snapshot

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
ACCOUNT = "cardco:acct_store:test"


def _payment(reference: str, status: str = "succeeded", pid: str = "pay_1", **extra: Any) -> dict[str, Any]:
    return {"id": pid, "account": ACCOUNT, "client_reference": reference, "status": status, "amount_minor": 500,
            "currency": "EUR", **extra}


def _attempt(reference: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"attempt_id": f"att-{reference}", "provider_account": ACCOUNT, "client_reference": reference,
            "state": state, "escalation_deadline": NOW - timedelta(seconds=5), "lease_expires_at": None,
            "amount_minor": 500, "currency": "EUR", "idempotency_key": f"key-{reference}",
            "intent_at": NOW - timedelta(minutes=1), **extra}


def _escalation(key: str, resolved: bool = False, attempt_id: str | None = None, **details: Any) -> dict[str, Any]:
    return {"escalation_key": key, "attempt_id": attempt_id, "reason": "deadline", "details": details,
            "resolved_at": NOW if resolved else None}


def _request(key: str, body: bytes, path: str = "/v1/payments", at: datetime = NOW,
             account: str | None = ACCOUNT) -> dict[str, Any]:
    headers = {"idempotency-key": key, **({"cardco-account": account} if account else {})}
    return {"method": "POST", "path": path, "body_base64": base64.b64encode(body).decode(), "headers": headers,
            "received_at": at.isoformat(timespec="milliseconds").replace("+00:00", "Z")}


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


def test_a_resend_under_the_original_key_must_carry_the_same_bytes_in_both_dialects() -> None:
    same = Snapshot(NOW, requests=[_request("k1", b'{"a":1}'), _request("k1", b'{"a":1}'), _request("k2", b"{}")])
    drifted = Snapshot(NOW, requests=[_request("k1", b'{"a":1}'), _request("k1", b'{"a": 1}'),
                                      _request("k3", b"a=1", "/stripe/v1/refunds", account=None),
                                      _request("k3", b"a=2", "/stripe/v1/refunds", account=None)])
    assert invariants.resends_byte_identical(same) == []
    assert invariants.resends_byte_identical(drifted) == [f"/v1/payments key k1 ({ACCOUNT}): 2 different bodies",
                                                          "/stripe/v1/refunds key k3 (stripe): 2 different bodies"]


def test_an_unresolved_attempt_is_a_violation_unless_unknown_past_its_deadline_with_an_open_escalation() -> None:
    escalated = _attempt("ORD-1-a1", "Unknown")
    early = _attempt("ORD-2-a1", "Unknown", escalation_deadline=NOW + timedelta(seconds=30))
    started = _attempt("ORD-3-a1", "Started")
    stalled = _attempt("ORD-5-a1", "Started")  # seed 004: recovery treats a stalled Started as Unknown
    s = Snapshot(NOW, payment_attempts=[escalated, early, started, _attempt("ORD-4-a1", "Succeeded"), stalled],
                 escalations=[_escalation("attempt:att-ORD-1-a1:deadline", attempt_id="att-ORD-1-a1"),
                              _escalation("attempt:att-ORD-2-a1:x", attempt_id="att-ORD-2-a1"),
                              _escalation("attempt:att-ORD-5-a1:resend-not-safe:order-not-payable",
                                          attempt_id="att-ORD-5-a1")])
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


def test_the_ledger_and_the_payment_attempts_agree_both_ways_amount_and_currency_included() -> None:
    """A Succeeded attempt has exactly one payment that took effect, a Failed, NotApplied
    or NotStarted one none; every entry belongs to an attempt and carries its amount and currency."""
    attempts = [_attempt("ORD-1-a1", "Succeeded"), _attempt("ORD-2-a1", "Failed"), _attempt("ORD-3-a1", "NotStarted"),
                _attempt("ORD-4-a1", "Unknown")]
    # The Stripe dialect writes the currency lower-case: the same ISO 4217 code.
    ledger = [_payment("ORD-1-a1"), _payment("ORD-2-a1", "failed", "pay_2"),
              _payment("ORD-4-a1", "succeeded", "pay_4", currency="eur")]
    assert invariants.ledger_payments_agree(Snapshot(NOW, ledger_payments=ledger, payment_attempts=attempts)) == []
    planted = [_payment("ORD-1-a1", amount_minor=501), _payment("ORD-2-a1", "succeeded", "pay_2"),
               _payment("ORD-3-a1", "refunded", "pay_3", currency="USD"), _payment("ORD-9-a1", "failed", "pay_9")]
    assert invariants.ledger_payments_agree(Snapshot(NOW, ledger_payments=planted, payment_attempts=attempts)) == [
        "payment attempt ORD-1-a1 (Succeeded): CardCo's pay_1 is 501 EUR, the attempt 500 EUR",
        "payment attempt ORD-2-a1 (Failed): CardCo's pay_2 is succeeded",
        "payment attempt ORD-3-a1 (NotStarted): CardCo's pay_3 is refunded",
        "payment attempt ORD-3-a1 (NotStarted): CardCo's pay_3 is 500 USD, the attempt 500 EUR",
        "CardCo's payment pay_9 (ORD-9-a1, failed) belongs to no gateway attempt"]
    missing = Snapshot(NOW, payment_attempts=attempts[:1])
    assert invariants.ledger_payments_agree(missing) == [
        "payment attempt ORD-1-a1 (Succeeded): 0 payments took effect at CardCo, not 1"]


def test_refunds_and_recalls_agree_with_the_ledger() -> None:
    refunds = [_attempt("ORD-1-r1", "Succeeded"), _attempt("ORD-2-r1", "NotApplied")]
    assert invariants.ledger_refunds_agree(Snapshot(NOW, ledger_refunds=[_payment("ORD-1-r1", pid="re_1")],
                                                    refund_attempts=refunds)) == []
    assert invariants.ledger_refunds_agree(Snapshot(NOW, ledger_refunds=[_payment("ORD-2-r1", pid="re_2")],
                                                    refund_attempts=refunds)) == [
        "refund attempt ORD-1-r1 (Succeeded): 0 refunds took effect at CardCo, not 1",
        "refund attempt ORD-2-r1 (NotApplied): CardCo's re_2 is succeeded"]
    recalls = [_attempt("PO-1-r1", "Succeeded"), _attempt("PO-2-r1", "Failed")]
    clean = [_payment("PO-1-r1", "recalled", "prc_1"), _payment("PO-2-r1", "failed", "prc_2")]
    assert invariants.ledger_recalls_agree(Snapshot(NOW, ledger_recalls=clean, recall_attempts=recalls)) == []
    planted = [_payment("PO-1-r1", "failed", "prc_1"), _payment("PO-2-r1", "recalled", "prc_2")]
    assert invariants.ledger_recalls_agree(Snapshot(NOW, ledger_recalls=planted, recall_attempts=recalls)) == [
        "recall attempt PO-1-r1 (Succeeded): 0 recalls took effect at CardCo, not 1",
        "recall attempt PO-2-r1 (Failed): CardCo's prc_2 is recalled"]


def test_a_paid_payout_is_paid_at_cardco_and_a_failed_one_is_not() -> None:
    """A payout the gateway records as Paid while CardCo failed it (or the reverse)."""
    payouts = [{"payout_id": "PO-1", "state": "Paid", "amount_minor": 500, "currency": "EUR"},
               {"payout_id": "PO-2", "state": "Failed", "amount_minor": 500, "currency": "EUR"}]
    attempts = [_attempt("PO-1-a1", "Succeeded"), _attempt("PO-2-a1", "Failed")]
    clean = [_payment("PO-1-a1", "returned", "po_1"), _payment("PO-2-a1", "failed", "po_2")]
    assert invariants.ledger_payouts_agree(Snapshot(NOW, ledger_payouts=clean, payouts=payouts,
                                                    payout_attempts=attempts)) == []
    planted = [_payment("PO-1-a1", "failed", "po_1"), _payment("PO-2-a1", "paid", "po_2")]
    assert invariants.ledger_payouts_agree(Snapshot(NOW, ledger_payouts=planted, payouts=payouts,
                                                    payout_attempts=attempts)) == [
        "payout attempt PO-1-a1 (Succeeded): 0 payouts took effect at CardCo, not 1",
        "payout attempt PO-2-a1 (Failed): CardCo's po_2 is paid",
        "payout PO-1 is Paid, CardCo paid nothing for it",
        "payout PO-2 is Failed, CardCo's po_2 is paid"]


def test_every_create_was_recorded_before_cardco_received_it_under_the_attempts_one_key() -> None:
    """Seed 004 / seed 000 "Started before send", both dialects: the intent dated no later than
    CardCo's receive time (at CardCo's millisecond precision), the attempt's own key."""
    intent = NOW - timedelta(microseconds=400)  # 13:59:59.999600: CardCo logs .999 for a request right after
    attempts = [_attempt("ORD-1-a1", "Succeeded", intent_at=intent),
                _attempt("ORD-2-a1", "Succeeded", provider_account="stripe:acct_store:test")]
    payouts = [_attempt("PO-1-a1", "Succeeded")]
    stripe_body = b"amount=500&currency=eur&metadata[client_reference]=ORD-2-a1"
    clean = [_request("key-ORD-1-a1", b'{"client_reference": "ORD-1-a1"}', at=intent),
             _request("key-ORD-2-a1", stripe_body, "/stripe/v1/payment_intents", account=None),
             _request("key-PO-1-a1", b'{"client_reference": "PO-1-a1"}', "/v1/payouts"),
             {**_request("k", b"", "/v1/payments?client_reference=ORD-1-a1"), "method": "GET"}]
    s = Snapshot(NOW, requests=clean, payment_attempts=attempts, payout_attempts=payouts)
    assert invariants.record_before_send(s) == []
    early = NOW - timedelta(minutes=2)
    planted = [_request("key-ORD-1-a1", b'{"client_reference": "ORD-1-a1"}', at=early),
               _request("other", stripe_body, "/stripe/v1/payment_intents", account=None),
               _request("key-PO-1-a1", b'{"client_reference": "PO-1-a1"}', "/v1/payments"),
               _request("key-PO-9-a1", b'{"client_reference": "PO-9-a1"}', "/v1/payouts")]
    s = Snapshot(NOW, requests=planted, payment_attempts=attempts, payout_attempts=payouts)
    assert invariants.record_before_send(s) == [
        "cardco payment create ORD-1-a1 at 13:58:00.000000: CardCo received it before the attempt's send intent "
        "(13:59:59.999600)",
        "cardco payment create PO-1-a1 at 14:00:00.000000: no gateway attempt of that kind has this reference",
        "cardco payout create PO-9-a1 at 14:00:00.000000: no gateway attempt of that kind has this reference",
        "stripe payment create ORD-2-a1 at 14:00:00.000000: key other, the attempt's key is key-ORD-2-a1"]


SEED = bytes(range(32))


def _effect(attempt_id: str, *, states: list[str] | None = None, rows: int | None = None,
            certified: dict[str, Any] | None = None, key_id: str = "k1") -> dict[str, Any]:
    """An effect record as the snapshot reads it, its certificate signed with ``SEED`` under ``key_id``."""
    states = states or ["PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED",
                        "EXECUTING", "EFFECT_CONFIRMED", "CERTIFIED"]
    certificate = {"certificate_version": CERTIFICATE_VERSION, "attempt_id": attempt_id, "provider_reference": "pay_1",
                   "amount_minor": "500", "currency": "EUR",
                   **(certified or {})}
    signed = sign(certificate, key_id=key_id, private_seed=SEED)
    return {"attempt_id": attempt_id, "rows": len(states) if rows is None else rows, "last_sequence": len(states),
            "states": states, "certificate": certificate, "key_id": key_id, "signature": signed["signature"]["value"]}


def test_every_succeeded_attempts_effect_is_certified_unbroken_verifiable_and_as_cardco_holds_it() -> None:
    """Seed 001, "The defensible claim": a Succeeded attempt's effect is certified, its ledger
    unbroken through EFFECT_CONFIRMED to CERTIFIED, its certificate verifying under a published key
    and naming CardCo's object, amount and currency for that attempt."""
    attempts = [_attempt("ORD-1-a1", "Succeeded"), _attempt("ORD-2-a1", "Failed")]
    keys = {"k1": public_key_of(SEED)}
    clean = Snapshot(NOW, ledger_payments=[_payment("ORD-1-a1")], payment_attempts=attempts,
                     effects=[_effect("att-ORD-1-a1")], certificate_keys=keys)
    assert invariants.effects_certified(clean) == []
    uncertified = {**_effect("att-ORD-1-a1", states=["EXECUTING", "EFFECT_CONFIRMED"]), "certificate": None}
    gap = _effect("att-ORD-1-a1", rows=7)
    assert invariants.effects_certified(replace(clean, effects=[uncertified])) == [
        "attempt ORD-1-a1 (Succeeded): its ledger is ['EXECUTING', 'EFFECT_CONFIRMED'] over 2 rows to sequence 2, "
        "not unbroken through EFFECT_CONFIRMED to CERTIFIED",
        "attempt ORD-1-a1 (Succeeded): no certificate"]
    assert invariants.effects_certified(replace(clean, effects=[gap])) == [
        "attempt ORD-1-a1 (Succeeded): its ledger is " + str(gap["states"]) + " over 7 rows to sequence 8, "
        "not unbroken through EFFECT_CONFIRMED to CERTIFIED"]
    assert invariants.effects_certified(replace(clean, effects=[])) == ["attempt ORD-1-a1 (Succeeded): no effect record"]
    unknown_key = _effect("att-ORD-1-a1", key_id="k2")
    assert invariants.effects_certified(replace(clean, effects=[unknown_key])) == [
        "attempt ORD-1-a1 (Succeeded): its certificate does not verify (unknown signing key 'k2')"]
    tampered = _effect("att-ORD-1-a1")
    tampered["certificate"] = {**tampered["certificate"], "amount_minor": "5000"}
    assert invariants.effects_certified(replace(clean, effects=[tampered]))[0].startswith(
        "attempt ORD-1-a1 (Succeeded): its certificate does not verify")
    other = _effect("att-ORD-1-a1", certified={"provider_reference": "pay_9", "amount_minor": "501"})
    assert invariants.effects_certified(replace(clean, effects=[other])) == [
        "attempt ORD-1-a1 (Succeeded): its certificate claims pay_9 501 EUR, CardCo holds pay_1 500 EUR"]


def test_a_succeeded_payment_needs_a_paid_order_and_a_paid_order_needs_its_payment() -> None:
    ledger = [_payment("ORD-1-a2"), _payment("ORD-2-a1", "refunded", "pay_2"), _payment("ORD-3-a1", pid="pay_3"),
              _payment("ORD-5-a1", pid="pay_5"), _payment("ORD-6-a1", pid="pay_6"), _payment("ORD-7-a1", "refunded")]
    orders = [{"order_id": "ORD-1", "state": "Paid"}, {"order_id": "ORD-2", "state": "Refunded"},
              {"order_id": "ORD-3", "state": "Cancelled"}, {"order_id": "ORD-4", "state": "Paid"},
              {"order_id": "ORD-5", "state": "PaidAfterCancel"}, {"order_id": "ORD-6", "state": "PaidAfterCancel"},
              {"order_id": "ORD-7", "state": "Paid"}]
    # An escalation whose text merely contains ORD-6 (ORD-66's) excuses nothing.
    owed = [_escalation("order:ORD-5:refund-owed", order_id="ORD-5"),
            _escalation("order:ORD-66:refund-owed", order_id="ORD-66")]
    refunds = [_payment("ORD-2-r1", pid="re_2"), _payment("ORD-7-r1", pid="re_7")]
    assert invariants.orders_match_ledger(Snapshot(NOW, ledger_payments=ledger, orders=orders, escalations=owed,
                                                   ledger_refunds=refunds)) == [
        "order ORD-3 is Cancelled while CardCo's payment is succeeded",
        "order ORD-6 is PaidAfterCancel while CardCo's payment is succeeded",
        "order ORD-7 is Paid while CardCo's payment is refunded",
        "order ORD-4 is Paid but CardCo holds no payment for it",
        "order ORD-7 is Paid, CardCo holds succeeded refund for it"]
    unrefunded = Snapshot(NOW, ledger_payments=ledger[1:2], orders=orders[1:2])
    assert invariants.orders_match_ledger(unrefunded) == ["order ORD-2 is Refunded, CardCo holds no succeeded "
                                                          "refund for it"]


def test_a_payment_that_succeeded_after_an_accepted_cancellation_is_refunded_or_escalated() -> None:
    ledger = [_payment("ORD-1-a1"), _payment("ORD-2-a1", "refunded", "pay_2"), _payment("ORD-3-a1", pid="pay_3"),
              _payment("ORD-4-a1", pid="pay_4")]
    orders = [{"order_id": "ORD-1", "state": "Paid"}, {"order_id": "ORD-2", "state": "Refunded"},
              {"order_id": "ORD-3", "state": "PaidAfterCancel"}, {"order_id": "ORD-4", "state": "Paid"}]
    s = Snapshot(NOW, ledger_payments=ledger, orders=orders, cancelled_orders=frozenset({"ORD-1", "ORD-2", "ORD-3"}),
                 escalations=[_escalation("order:ORD-3:refund-owed", order_id="ORD-3")])
    assert invariants.cancellations_respected(s) == [
        "order ORD-1: cancellation accepted, CardCo's pay_1 stays succeeded, the order is Paid"]


def test_no_send_intent_after_the_cancellation_committed() -> None:
    """Seed 004 "Cancellation goes through the same lock": an attempt started before the
    cancellation committed is fine (CancelRequested), one started after it is not."""
    committed = {"ORD-1": NOW, "ORD-2": NOW}
    attempts = [_attempt("ORD-1-a1", "Succeeded", order_id="ORD-1", intent_at=NOW - timedelta(milliseconds=3)),
                _attempt("ORD-2-a1", "Succeeded", order_id="ORD-2", intent_at=NOW + timedelta(milliseconds=40)),
                _attempt("ORD-3-a1", "Succeeded", order_id="ORD-3", intent_at=NOW + timedelta(minutes=1)),
                _attempt("ORD-4-a1", "NotApplied", order_id="ORD-4", intent_at=None)]
    s = Snapshot(NOW, payment_attempts=attempts, cancellations_committed=committed)
    assert invariants.no_send_after_cancellation(s) == [
        "order ORD-2: attempt ORD-2-a1's first send intent 14:00:00.040000 came after its cancellation committed "
        "(14:00:00.000000)"]


def test_no_payout_reaches_cardco_before_its_grant_window_opens() -> None:
    """Seed 000 (a grant is valid from its release time less the lead): CardCo's receive time of a
    payout create, at its millisecond precision, against the window the clerk's release time opens;
    a recall, and a payout the campaign did not ask for, are not judged."""
    opens = {"PO-1": NOW + timedelta(microseconds=700), "PO-2": NOW, "PO-3": NOW}
    clean = [_request("key-PO-1-a1", b'{"client_reference": "PO-1-a1"}', "/v1/payouts", at=NOW),
             _request("key-PO-2-a2", b'{"client_reference": "PO-2-a2"}', "/v1/payouts", at=NOW + timedelta(seconds=9)),
             _request("key-PO-3-r1", b'{"client_reference": "PO-3-a1"}', "/v1/payouts/po_3/recalls",
                      at=NOW - timedelta(seconds=9)),
             _request("key-PO-9-a1", b'{"client_reference": "PO-9-a1"}', "/v1/payouts", at=NOW - timedelta(hours=1))]
    assert invariants.no_payout_before_its_grant(Snapshot(NOW, requests=clean, payout_windows_open=opens)) == []
    early = [_request("key-PO-3-a1", b'{"client_reference": "PO-3-a1"}', "/v1/payouts",
                      at=NOW - timedelta(seconds=4))]
    assert invariants.no_payout_before_its_grant(Snapshot(NOW, requests=early, payout_windows_open=opens)) == [
        "payout PO-3: CardCo received PO-3-a1 at 13:59:56.000000, before its grant's window opened "
        "(14:00:00.000000)"]


def test_every_dispatched_effect_reaches_the_sink_and_a_key_never_carries_two_payloads() -> None:
    outbox = [_outbox(1, "attempt:1:order-confirmation"), _outbox(2, "attempt:2:order-confirmation"),
              _outbox(3, "alert:1", ordering=None, kind="operator-alert")]
    sink = [_sink("attempt:1:order-confirmation"), _sink("attempt:1:order-confirmation"),
            _sink("attempt:9:x", v=1), _sink("attempt:9:x", v=2)]
    attempts = [{**_attempt("ORD-1-a1", "Succeeded"), "attempt_id": "1"}, _attempt("ORD-2-a1", "Succeeded")]
    s = Snapshot(NOW, outbox=outbox, sink=sink, payment_attempts=attempts)
    assert invariants.sink_once_per_dedup_key(s) == [
        "payment attempt ORD-2-a1 succeeded, no merchant effect was written", "attempt:9:x: 2 different payloads"]
    assert invariants.effects_delivered_or_escalated(s) == [
        "outbox 2 (order-confirmation, attempt:2:order-confirmation): dispatched, never received"]
    assert invariants.sink_redeliveries(s) == 2


def test_a_dead_lettered_effect_needs_an_open_escalation_naming_its_message() -> None:
    """Dead letters are no longer exempt; the escalation names the message id exactly."""
    dead = [_outbox(4, "attempt:4:x", dispatched_at=None, dead_lettered_at=NOW),
            _outbox(5, "attempt:5:x", dispatched_at=None, dead_lettered_at=NOW),
            _outbox(6, "attempt:6:x", dispatched_at=None)]
    told = [_escalation("outbox:4:dead-lettered", message_id=4), _escalation("outbox:55:dead-lettered", message_id=55)]
    assert invariants.effects_delivered_or_escalated(Snapshot(NOW, outbox=dead, escalations=told)) == [
        "outbox 5 (order-confirmation, attempt:5:x): dead-lettered, no open escalation names it",
        "outbox 6 (order-confirmation, attempt:6:x): pending, never received"]


def test_a_dead_letter_the_operator_retried_is_judged_as_it_was_found_before_the_retry() -> None:
    """Seed 004 ("Downstream Work": what cannot be delivered is escalated): the operator's retry
    resolves the escalation and delivers the row, so a dead letter nobody was told of would pass
    at the end; it is judged on what the operator found first. An operator alert's dead letter is
    logged, not escalated, and is judged by alerts-delivered-or-logged."""
    found = [_outbox(4, "attempt:4:x", dispatched_at=None, dead_lettered_at=NOW),
             _outbox(5, "attempt:5:x", dispatched_at=None, dead_lettered_at=NOW),
             _outbox(7, "alert:7", ordering=None, kind="operator-alert", dispatched_at=None, dead_lettered_at=NOW)]
    open_then = [_escalation("outbox:4:dead-lettered", message_id=4),
                 _escalation("outbox:5:dead-lettered-but-says-45", message_id=45)]
    delivered = [_outbox(4, "attempt:4:x"), _outbox(5, "attempt:5:x")]
    s = Snapshot(NOW, outbox=delivered, sink=[_sink("attempt:4:x"), _sink("attempt:5:x")],
                 dead_letter_rounds=((found, open_then),))
    assert invariants.effects_delivered_or_escalated(s) == [
        "outbox 5 (order-confirmation, attempt:5:x): dead-lettered, no open escalation named it when the operator "
        "found it"]


def test_an_operator_alert_reaches_the_alert_sink_or_the_log() -> None:
    alerts = [_outbox(1, "alert:1", ordering=None, kind="operator-alert"),
              _outbox(2, "alert:2", ordering=None, kind="operator-alert", dispatched_at=None, dead_lettered_at=NOW),
              _outbox(3, "alert:3", ordering=None, kind="operator-alert", dispatched_at=None, dead_lettered_at=NOW),
              _outbox(4, "alert:4", ordering=None, kind="operator-alert", dispatched_at=None),
              _outbox(5, "payout-job:1", ordering=None, kind="payout-job")]
    s = Snapshot(NOW, outbox=alerts, alerts=[_sink("alert:1")], logged_dead_letters=frozenset({2, 3}))
    assert invariants.alerts_delivered_or_logged(s) == []
    s = Snapshot(NOW, outbox=alerts, logged_dead_letters=frozenset({3}))
    assert invariants.alerts_delivered_or_logged(s) == ["alert 1 (alert:1): dispatched, never received",
                                                        "alert 2 (alert:2): dead-lettered, not logged"]


def test_what_the_run_saw_fails_it_a_deadline_an_unready_process_a_shortfall_a_failed_step_a_5xx() -> None:
    """A run that does nothing, hits its settle deadline, has a refused fault install or
    a disruption that threw, or met a 5xx outside an outage, fails."""
    ok = Snapshot(NOW, asked={"checkouts": 3, "payouts": 1}, made={"checkouts": 3, "payouts": 1})
    assert [name for name, found in invariants.check(ok).items() if found] == []
    bad = Snapshot(NOW, still_moving=("2 payout attempts Started",), unhealthy=("web.2: /readyz answered 503",),
                   asked={"checkouts": 3, "payouts": 1}, made={"checkouts": 1},
                   failed_steps=("wave 2: POST /_control/faults answered 400",),
                   unexpected_5xx=("14:00:01 POST /v1/orders: 500",))
    assert invariants.settled(bad) == ["settle deadline reached: 2 payout attempts Started"]
    assert invariants.fleet_healthy(bad) == ["web.2: /readyz answered 503"]
    assert invariants.operations_as_asked(bad) == ["checkouts: 1 of 3 reached an outcome",
                                                   "payouts: 0 of 1 reached an outcome"]
    assert invariants.run_steps_succeeded(bad) == ["wave 2: POST /_control/faults answered 400"]
    assert invariants.no_unexpected_5xx(bad) == ["14:00:01 POST /v1/orders: 500"]


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


def test_an_outbox_row_long_past_due_is_stranded_a_dead_letter_is_judged_elsewhere() -> None:
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
