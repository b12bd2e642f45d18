"""What must hold after a campaign has settled (issue 12; DESIGN.md, "Invariants" and "Quality
bars": "afterwards the provider's ledger and the gateway's records must agree, with zero duplicate
effects and zero lost notifications").

Every check is a pure function of a :class:`Snapshot` (CardCo's ledger, request log and webhook
deliveries; the gateway's rows; the merchant sink's messages) and returns the violations it
found, each a short line naming the object, so a failing run says what to look at. The choices
behind each reading are in docs/decisions/0028.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

Row = dict[str, Any]

PAID_PAYMENT = frozenset({"succeeded", "refunded"})
PAID_PAYOUT = frozenset({"paid", "returned"})
PAID_ORDER = frozenset({"Paid", "PaidAfterCancel", "Refunded"})
# A checkout attempt's NotStarted may still be sent; a payout, recall or refund attempt's NotStarted
# is a resolution (seed 000: a lapsed claim that never reached Started).
UNRESOLVED = frozenset({"NotStarted", "Started", "Unknown"})
PIPELINE_UNRESOLVED = frozenset({"Claimed", "Started", "Unknown"})
NEGATIVE = frozenset({"Failed", "NotApplied"})
CREATES = ("/v1/payments", "/v1/payouts")


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    # CardCo (GET /_control/ledger, /_control/requests, /_control/webhooks)
    ledger_payments: list[Row] = field(default_factory=list)
    ledger_payouts: list[Row] = field(default_factory=list)
    ledger_refunds: list[Row] = field(default_factory=list)
    requests: list[Row] = field(default_factory=list)
    deliveries: list[Row] = field(default_factory=list)
    # the gateway's database
    orders: list[Row] = field(default_factory=list)
    payment_attempts: list[Row] = field(default_factory=list)
    payouts: list[Row] = field(default_factory=list)
    payout_attempts: list[Row] = field(default_factory=list)
    recall_attempts: list[Row] = field(default_factory=list)
    refund_attempts: list[Row] = field(default_factory=list)
    grants: list[Row] = field(default_factory=list)  # payout grants, "owner" = payout id
    refund_grants: list[Row] = field(default_factory=list)  # "owner" = order id
    escalations: list[Row] = field(default_factory=list)
    notifications: list[Row] = field(default_factory=list)
    outbox: list[Row] = field(default_factory=list)
    # the merchant sink (GET {merchant_sink_url}), oldest first
    sink: list[Row] = field(default_factory=list)
    # the gateway's API, as the campaign's merchants saw it: orders whose cancellation it accepted
    cancelled_orders: frozenset[str] = frozenset()
    # how far past a due time a row may be and still count as "about to be handled"
    grace: timedelta = timedelta(seconds=10)

    def open_escalation_naming(self, identifier: str) -> bool:
        """An unresolved escalation whose key, attempt or details name ``identifier``."""
        return any(e["resolved_at"] is None and (identifier in e["escalation_key"] or str(e.get("attempt_id")) ==
                                                 identifier or identifier in map(str, e["details"].values()))
                   for e in self.escalations)


def _order_of(reference: str) -> str:
    """``<order_id>-a<N>`` (a payment) or ``<order_id>-r<N>`` (a refund) -> ``<order_id>``."""
    return reference.rsplit("-a", 1)[0] if re.search(r"-a\d+$", reference) else reference.rsplit("-r", 1)[0]


def one_payment_per_order(s: Snapshot) -> list[str]:
    """0 orders with more than one effective payment."""
    paid = Counter(_order_of(p["client_reference"]) for p in s.ledger_payments if p["status"] in PAID_PAYMENT)
    return [f"order {order}: {n} payments took effect" for order, n in sorted(paid.items()) if n > 1]


def one_refund_per_order(s: Snapshot) -> list[str]:
    """0 orders refunded more than once (refunds are full, docs/decisions/0019)."""
    refunded = Counter(_order_of(r["client_reference"]) for r in s.ledger_refunds if r["status"] == "succeeded")
    return [f"order {order}: refunded {n} times" for order, n in sorted(refunded.items()) if n > 1]


def one_payout_per_payout(s: Snapshot) -> list[str]:
    """0 payouts paid more than once."""
    paid = Counter(_order_of(p["client_reference"]) for p in s.ledger_payouts if p["status"] in PAID_PAYOUT)
    return [f"payout {payout}: paid {n} times" for payout, n in sorted(paid.items()) if n > 1]


def resends_byte_identical(s: Snapshot) -> list[str]:
    """Every resend byte-identical under its original key: one body per (account, create, key)."""
    bodies: dict[tuple[str, str, str], set[bytes]] = defaultdict(set)
    for request in s.requests:
        path = request["path"].split("?", 1)[0]
        key = request["headers"].get("idempotency-key")
        if request["method"] == "POST" and key and (path in CREATES or path.endswith("/recalls")
                                                    or path.endswith("/refunds")):
            account = request["headers"].get("cardco-account", "")
            bodies[(account, path, key)].add(base64.b64decode(request["body_base64"]))
    return [f"{path} key {key} ({account}): {len(found)} different bodies"
            for (account, path, key), found in sorted(bodies.items()) if len(found) > 1]


def _resolved_or_escalated(s: Snapshot, rows: Iterable[Row], what: str,
                           unresolved: frozenset[str] = PIPELINE_UNRESOLVED) -> list[str]:
    found = []
    for row in rows:
        if row["state"] not in unresolved:
            continue
        attempt = str(row["attempt_id"])
        deadline = row["escalation_deadline"]
        # Seed 004: a stalled Started attempt is treated as Unknown; escalating never changes the row.
        if row["state"] in ("Started", "Unknown") and deadline is not None and deadline <= s.now and \
                s.open_escalation_naming(attempt):
            continue
        found.append(f"{what} {row['client_reference']} ({attempt}) is {row['state']}")
    return found


def attempts_resolved(s: Snapshot) -> list[str]:
    """Every attempt resolved, or Unknown (or a stalled Started, which recovery treats as Unknown)
    with an open escalation past its deadline."""
    return (_resolved_or_escalated(s, s.payment_attempts, "payment attempt", UNRESOLVED)
            + _resolved_or_escalated(s, s.payout_attempts, "payout attempt")
            + _resolved_or_escalated(s, s.recall_attempts, "recall attempt")
            + _resolved_or_escalated(s, s.refund_attempts, "refund attempt"))


def grants_used_or_escalated(s: Snapshot) -> list[str]:
    """Every single-use grant is used, still usable, or a person is told: a grant that lapsed
    unconsumed needs an open escalation naming its payout or order (seed 000: "grants issued but
    never consumed"; the refund-owed check of docs/decisions/0019). An Approved payout whose
    attempt was proven NotApplied or NotStarted consumed its grant and awaits a fresh decision
    (seed 000, "Materially New Attempt"); a paid payout's or a refunded order's old grants are moot."""
    approved = {p["payout_id"] for p in s.payouts if p["state"] == "Approved"}
    refundable = {o["order_id"] for o in s.orders if o["state"] in ("Paid", "PaidAfterCancel")}
    found = []
    for what, grants, live in (("payout", s.grants, approved), ("refund of order", s.refund_grants, refundable)):
        latest: dict[str, Row] = {}
        for grant in sorted(grants, key=lambda g: g["expires_at"]):
            latest[grant["owner"]] = grant
        for owner, grant in sorted(latest.items()):
            lapsed = grant["state"] == "Expired" or grant["state"] == "Issued" and grant["expires_at"] <= s.now
            if owner in live and lapsed and not s.open_escalation_naming(owner):
                found.append(f"{what} {owner}: its grant lapsed unused and nobody was told")
    return found


def no_false_negative(s: Snapshot) -> list[str]:
    """No attempt rounded off to Failed/NotApplied while CardCo holds its payment or payout."""
    found = []
    for ledger, attempts in ((s.ledger_payments, s.payment_attempts), (s.ledger_payouts, s.payout_attempts),
                             (s.ledger_refunds, s.refund_attempts)):
        by_reference = {(a["provider_account"], a["client_reference"]): a for a in attempts}
        for entry in ledger:
            if entry["status"] not in PAID_PAYMENT | PAID_PAYOUT:
                continue
            attempt = by_reference.get((entry["account"], entry["client_reference"]))
            if attempt is None:
                found.append(f"{entry['client_reference']}: CardCo holds {entry['id']}, the gateway has no attempt")
            elif attempt["state"] in NEGATIVE:
                found.append(f"{entry['client_reference']}: {attempt['state']} while CardCo holds {entry['id']} "
                             f"({entry['status']})")
    return found


def orders_match_ledger(s: Snapshot) -> list[str]:
    """Every succeeded payment's order is Paid (PaidAfterCancel while its refund is owed and
    escalated), every refunded one's is Refunded, and every order the gateway calls paid or
    refunded has its payment at CardCo (docs/decisions/0020 for the order states)."""
    found = []
    orders = {o["order_id"]: o["state"] for o in s.orders}
    at_cardco: dict[str, str] = {}
    for payment in s.ledger_payments:
        if payment["status"] in PAID_PAYMENT:
            at_cardco[_order_of(payment["client_reference"])] = payment["status"]
    for order, status in sorted(at_cardco.items()):
        state = orders.get(order)
        if (status, state) in (("succeeded", "Paid"), ("refunded", "Refunded")) or \
                state == "PaidAfterCancel" and s.open_escalation_naming(order):
            continue
        found.append(f"order {order} is {state} while CardCo's payment is {status}")
    for order, state in sorted(orders.items()):
        if state in PAID_ORDER and order not in at_cardco:
            found.append(f"order {order} is {state} but CardCo holds no payment for it")
    return found


def cancellations_respected(s: Snapshot) -> list[str]:
    """An order whose cancellation the gateway accepted (``Cancelled`` or ``CancelRequested``) is
    never left charged: a payment that succeeded anyway is refunded as its own operation, or a
    person is told (seed 004, "Cancellation": "if it turns out to have succeeded, the refund is its
    own operation"; issue 11 item 3)."""
    orders = {o["order_id"]: o["state"] for o in s.orders}
    found = []
    for payment in s.ledger_payments:
        order = _order_of(payment["client_reference"])
        if order in s.cancelled_orders and payment["status"] == "succeeded" \
                and not s.open_escalation_naming(order):
            found.append(f"order {order}: cancellation accepted, CardCo's {payment['id']} stays succeeded, "
                         f"the order is {orders.get(order)}")
    return found


def _business(s: Snapshot) -> list[Row]:
    return [row for row in s.outbox if row["ordering_key"] is not None and row["kind"] != "payout-job"
            and not row["kind"].endswith("-job")]


def sink_once_per_dedup_key(s: Snapshot) -> list[str]:
    """Every merchant effect written and delivered, each dedup key standing for one effect: a
    succeeded payment has its effect in the outbox, a delivered row is at the sink, and the sink
    never got two different payloads under one key. (A redelivery of
    the same message, e.g. after a worker died between the POST and its commit, is what the dedup
    key is for; the report counts those separately.)"""
    found = []
    payloads: dict[str, set[str]] = defaultdict(set)
    for message in s.sink:
        payloads[message["dedup_key"]].add(repr(sorted(message["payload"].items())))
    written = {row["ordering_key"] for row in _business(s)}
    found += [f"payment attempt {a['client_reference']} succeeded, no merchant effect was written"
              for a in s.payment_attempts if a["state"] == "Succeeded" and f"attempt:{a['attempt_id']}" not in written]
    for row in _business(s):
        if row["dispatched_at"] is not None and row["dedup_key"] not in payloads:
            found.append(f"outbox {row['message_id']} ({row['dedup_key']}) dispatched, never received")
    found += [f"{key}: {len(p)} different payloads" for key, p in sorted(payloads.items()) if len(p) > 1]
    return found


def sink_redeliveries(s: Snapshot) -> int:
    """How many sink messages repeated a dedup key already received (informational)."""
    return sum(n - 1 for n in Counter(m["dedup_key"] for m in s.sink).values())


def sink_in_order(s: Snapshot) -> list[str]:
    """Per ordering key, the sink first received the effects in the order they were written."""
    first_seen: dict[str, int] = {}
    for index, message in enumerate(s.sink):
        first_seen.setdefault(message["dedup_key"], index)
    by_key: dict[str, list[Row]] = defaultdict(list)
    for row in _business(s):
        by_key[row["ordering_key"]].append(row)
    found = []
    for ordering_key, rows in sorted(by_key.items()):
        received = [first_seen[r["dedup_key"]] for r in sorted(rows, key=lambda r: r["message_id"])
                    if r["dedup_key"] in first_seen]
        if received != sorted(received):
            found.append(f"{ordering_key}: effects received out of order")
    return found


def _sent_event_id(delivery: Row) -> str | None:
    """The event id the delivered payload carried (``omit_event_id`` sends none)."""
    try:
        payload = json.loads(delivery["body"])
    except ValueError:
        return None
    event_id = payload.get("id") if isinstance(payload, dict) else None
    return event_id if isinstance(event_id, str) and event_id else None


def webhooks_accounted(s: Snapshot) -> list[str]:
    """Every webhook CardCo delivered (a 2xx) is stored by the gateway and either applied to an
    attempt or escalated; none lost. A payload without an event id is stored once per delivery."""
    stored: dict[tuple[str, str], Row] = {}
    unkeyed: list[Row] = []
    for n in s.notifications:
        event_id = n["detail"].get("provider_event_id")
        if event_id:
            stored[(n["provider_account"], event_id)] = n
        else:
            unkeyed.append(n)
    escalated = {e["escalation_key"] for e in s.escalations}
    found = []
    delivered_unkeyed = 0
    for delivery in s.deliveries:
        if delivery["state"] != "delivered":
            continue
        event_id = _sent_event_id(delivery)
        if event_id is None:
            delivered_unkeyed += 1
            continue
        notification = stored.get((delivery["account"], event_id))
        if notification is None:
            found.append(f"{event_id} ({delivery['type']}): acknowledged, not stored")
        elif not _applied_or_escalated(notification, escalated):
            found.append(f"{event_id} ({delivery['type']}): stored, neither applied nor escalated")
    if len(unkeyed) < delivered_unkeyed:
        found.append(f"{delivered_unkeyed} webhooks without an event id acknowledged, {len(unkeyed)} stored")
    found += [f"notification {n['event_id']}: stored, neither applied nor escalated"
              for n in unkeyed if not _applied_or_escalated(n, escalated)]
    return sorted(set(found))


def _applied_or_escalated(notification: Row, escalated: set[str]) -> bool:
    detail = notification["detail"]
    return notification["attempt_id"] is not None or detail.get("payout_attempt_id") is not None \
        or detail.get("refund_attempt_id") is not None \
        or detail.get("escalation_key") in escalated or notification.get("applied_later", False)


def outbox_not_stranded(s: Snapshot) -> list[str]:
    """No outbox row left pending long past its due time (dead letters are escalated, not stranded)."""
    return [f"outbox {row['message_id']} ({row['kind']}, {row['dedup_key']}) due {row['next_attempt_at']:%H:%M:%S}"
            for row in s.outbox
            if row["dispatched_at"] is None and row["dead_lettered_at"] is None
            and row["next_attempt_at"] < s.now - s.grace]


def no_lease_past_expiry(s: Snapshot) -> list[str]:
    """No unresolved attempt still held by a lease that expired long ago (a dead worker's)."""
    found = []
    for what, rows in (("payment attempt", s.payment_attempts), ("payout attempt", s.payout_attempts),
                       ("recall attempt", s.recall_attempts), ("refund attempt", s.refund_attempts)):
        for row in rows:
            expires = row.get("lease_expires_at")
            if row["state"] in UNRESOLVED | PIPELINE_UNRESOLVED and expires is not None and expires < s.now - s.grace:
                found.append(f"{what} {row['client_reference']}: lease expired {expires:%H:%M:%S}, still held")
    return found


CHECKS: dict[str, Callable[[Snapshot], list[str]]] = {
    "one-payment-per-order": one_payment_per_order,
    "one-refund-per-order": one_refund_per_order,
    "one-payout-per-payout": one_payout_per_payout,
    "resends-byte-identical": resends_byte_identical,
    "attempts-resolved-or-escalated": attempts_resolved,
    "grants-used-or-escalated": grants_used_or_escalated,
    "no-negative-while-provider-holds-it": no_false_negative,
    "succeeded-payment-means-paid-order": orders_match_ledger,
    "cancellation-respected": cancellations_respected,
    "sink-once-per-dedup-key": sink_once_per_dedup_key,
    "sink-in-order-per-ordering-key": sink_in_order,
    "webhooks-applied-or-escalated": webhooks_accounted,
    "outbox-not-stranded": outbox_not_stranded,
    "no-lease-past-expiry": no_lease_past_expiry,
}


def check(snapshot: Snapshot) -> dict[str, list[str]]:
    """Every invariant with the violations found (an empty list when it holds)."""
    return {name: checker(snapshot) for name, checker in CHECKS.items()}
