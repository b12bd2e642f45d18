"""What must hold after a campaign has settled (DESIGN.md, "Invariants" and "Quality
bars": "afterwards the provider's ledger and the gateway's records must agree, with zero duplicate
effects and zero lost notifications").

Every check is a pure function of a :class:`Snapshot` (CardCo's ledger, request log and webhook
deliveries; the gateway's rows; the sinks' messages and the workers' logged dead letters; what the
run itself saw: the settle, the fleet's health, the operations made, the steps that failed) and
returns the violations it found, each a short line naming the object, so a failing run says what
to look at. Money and ordering are judged from evidence the gateway does not write (CardCo's
ledger and request log, the sinks), the gateway's rows only say what it claims. The
choices behind each reading are in docs/decisions/0028 and 0055.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import parse_qs

from gateway.domain.certificates import verify

Row = dict[str, Any]

PAID_PAYMENT = frozenset({"succeeded", "refunded"})
PAID_PAYOUT = frozenset({"paid", "returned"})
TOOK_EFFECT = {"payment": PAID_PAYMENT, "refund": frozenset({"succeeded"}), "payout": PAID_PAYOUT,
               "recall": frozenset({"recalled"})}
# A resolution that says the money did not move (seed 000, seed 004): CardCo must hold nothing for it.
NO_EFFECT = frozenset({"Failed", "NotApplied", "NotStarted"})
PAID_ORDER = frozenset({"Paid", "PaidAfterCancel", "Refunded"})
# A checkout attempt's NotStarted may still be sent; a payout, recall or refund attempt's NotStarted
# is a resolution (seed 000: a lapsed claim that never reached Started).
UNRESOLVED = frozenset({"NotStarted", "Started", "Unknown"})
PIPELINE_UNRESOLVED = frozenset({"Claimed", "Started", "Unknown"})
STRIPE_MOUNT = "/stripe"
# The create requests of both dialects (CardCo's paths, the Stripe mount's), by what they create.
CREATE_PATHS = (("payment", re.compile(r"/v1/payments")), ("refund", re.compile(r"/v1/payments/[^/]+/refunds")),
                ("payout", re.compile(r"/v1/payouts")), ("recall", re.compile(r"/v1/payouts/[^/]+/recalls")),
                ("payment", re.compile(r"/stripe/v1/payment_intents")), ("refund", re.compile(r"/stripe/v1/refunds")),
                ("payout", re.compile(r"/stripe/v1/payouts")))


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    # CardCo (GET /_control/ledger, /_control/requests, /_control/webhooks)
    ledger_payments: list[Row] = field(default_factory=list)
    ledger_payouts: list[Row] = field(default_factory=list)
    ledger_refunds: list[Row] = field(default_factory=list)
    ledger_recalls: list[Row] = field(default_factory=list)
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
    # the merchant sink (GET {merchant_sink_url}) and the alert sink, oldest first
    sink: list[Row] = field(default_factory=list)
    alerts: list[Row] = field(default_factory=list)
    # outbox message ids the workers logged as dead-lettered (``outbox_dead_lettered`` lines)
    logged_dead_letters: frozenset[int] = frozenset()
    # each time the campaign's operator retried dead letters (which resolves their escalations):
    # the dead-lettered rows (GET /v1/ops/outbox?state=dead) and the open escalations it found first
    dead_letter_rounds: tuple[tuple[list[Row], list[Row]], ...] = ()
    # the gateway's API, as the campaign's merchants saw it: orders whose cancellation it accepted
    cancelled_orders: frozenset[str] = frozenset()
    # when each of those cancellations committed: the order's ``updated_at`` in the answer
    cancellations_committed: Mapping[str, datetime] = field(default_factory=dict)
    # the campaign's clerk: when each payout's grant may first be valid, from the release time the
    # clerk asked for less the configured grant lead (seed 000: ``not_before = release_at - lead``)
    payout_windows_open: Mapping[str, datetime] = field(default_factory=dict)
    # seed 001: every effect record with its ledger's rows (count, last sequence, states in order)
    # and its certificate, if any; and the keys the gateway publishes (GET /v1/keys/certificates)
    effects: list[Row] = field(default_factory=list)
    certificate_keys: Mapping[str, bytes] = field(default_factory=dict)
    # what the run saw: what was still moving when the settle reached its deadline (empty when it
    # settled), processes not alive or not ready at the end, the scenarios asked for and those
    # that reached an outcome, steps of the run that failed (a fault-rule install, a disruption,
    # a client), and 5xx answers outside an injected outage
    still_moving: tuple[str, ...] = ()
    unhealthy: tuple[str, ...] = ()
    asked: Mapping[str, int] = field(default_factory=dict)
    made: Mapping[str, int] = field(default_factory=dict)
    failed_steps: tuple[str, ...] = ()
    unexpected_5xx: tuple[str, ...] = ()
    # how far past a due time a row may be and still count as "about to be handled"
    grace: timedelta = timedelta(seconds=10)

    def open_escalation_naming(self, identifier: str) -> bool:
        """An unresolved escalation that names ``identifier`` exactly (:func:`names`)."""
        return any(e["resolved_at"] is None and names(e, identifier) for e in self.escalations)


def names(escalation: Row, identifier: str) -> bool:
    """Whether the escalation names ``identifier`` exactly in its own fields: its attempt, or one
    of its details' values (an attempt, payout, refund, order or message id). Its key or text
    merely containing the id names nothing."""
    return str(escalation.get("attempt_id")) == identifier or identifier in map(str, escalation["details"].values())


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


class Create(NamedTuple):
    """One create request in CardCo's log, either dialect."""

    kind: str  # payment, refund, payout, recall
    dialect: str  # "cardco" or "stripe": which mount received it
    account: str  # CardCo's header; the Stripe mount's key names the account and is redacted: ""
    path: str
    reference: str | None
    key: str | None
    body: bytes
    received_at: datetime


def _reference_in(dialect: str, body: bytes) -> str | None:
    """The client reference a create carries: CardCo's JSON field, Stripe's form metadata."""
    try:
        if dialect == "stripe":
            return parse_qs(body.decode()).get("metadata[client_reference]", [None])[0]
        reference = json.loads(body).get("client_reference")
        return reference if isinstance(reference, str) else None
    except (ValueError, AttributeError):
        return None


def creates(s: Snapshot) -> list[Create]:
    """Every create request CardCo received, in both dialects (``CREATE_PATHS``)."""
    found = []
    for request in s.requests:
        path = request["path"].split("?", 1)[0]
        kind = next((k for k, pattern in CREATE_PATHS if pattern.fullmatch(path)), None)
        if request["method"] != "POST" or kind is None:
            continue
        dialect = "stripe" if path.startswith(STRIPE_MOUNT + "/") else "cardco"
        body = base64.b64decode(request["body_base64"])
        found.append(Create(kind, dialect, request["headers"].get("cardco-account", ""), path,
                            _reference_in(dialect, body), request["headers"].get("idempotency-key"), body,
                            datetime.fromisoformat(request["received_at"].replace("Z", "+00:00"))))
    return found


def resends_byte_identical(s: Snapshot) -> list[str]:
    """Every resend byte-identical under its original key: one body per (account, create, key),
    in both dialects."""
    bodies: dict[tuple[str, str, str], set[bytes]] = defaultdict(set)
    for create in creates(s):
        if create.key:
            bodies[(create.account or create.dialect, create.path, create.key)].add(create.body)
    return [f"{path} key {key} ({account}): {len(found)} different bodies"
            for (account, path, key), found in sorted(bodies.items()) if len(found) > 1]


def _attempts_of(s: Snapshot) -> dict[str, list[Row]]:
    return {"payment": s.payment_attempts, "refund": s.refund_attempts, "payout": s.payout_attempts,
            "recall": s.recall_attempts}


def _dialect(account: str) -> str:
    return "stripe" if account.startswith("stripe:") else "cardco"


def record_before_send(s: Snapshot) -> list[str]:
    """Seed 004 (the attempt is recorded before any provider call; a resend uses the original
    key), seed 000 ("Started before send"): every create request CardCo received, in both
    dialects, belongs to a gateway attempt of its kind and account, whose send intent (a
    payment's first ``send_intent`` event, a payout's, recall's or refund's Started write) is
    dated no later than CardCo's receive time (CardCo logs milliseconds: the intent is compared at
    that precision, and nothing else is allowed for), and carries that attempt's one idempotency
    key: a second key for one client reference is a violation whatever the bytes."""
    by_reference: dict[tuple[str, str, str], Row] = {}
    for kind, rows in _attempts_of(s).items():
        for row in rows:
            account = row["provider_account"]
            by_reference[(kind, account if _dialect(account) == "cardco" else "stripe", row["client_reference"])] = row
    found = []
    for create in creates(s):
        what = f"{create.dialect} {create.kind} create {create.reference} at {create.received_at:%H:%M:%S.%f}"
        attempt = by_reference.get((create.kind, create.account or create.dialect, create.reference or ""))
        if attempt is None:
            found.append(f"{what}: no gateway attempt of that kind has this reference")
            continue
        if create.key != attempt["idempotency_key"]:
            found.append(f"{what}: key {create.key}, the attempt's key is {attempt['idempotency_key']}")
        intent = attempt.get("intent_at")
        if intent is None or intent.replace(microsecond=intent.microsecond // 1000 * 1000) > create.received_at:
            found.append(f"{what}: CardCo received it before the attempt's send intent "
                         f"({'none' if intent is None else f'{intent:%H:%M:%S.%f}'})")
    return sorted(set(found))


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


def _same_money(entry: Row, ours: Row) -> bool:
    """Same amount in minor units and the same ISO 4217 currency (Stripe writes it lower-case)."""
    return bool(entry["amount_minor"] == ours["amount_minor"] and entry["currency"].upper() == ours["currency"].upper())


def _ledger_agrees(kind: str, ledger: list[Row], attempts: list[Row]) -> list[str]:
    """Both directions, amount and currency: a Succeeded attempt has exactly one entry
    that took effect at CardCo; a Failed, NotApplied or NotStarted one has none; every entry of the
    ledger (whatever its status) belongs to an attempt of the gateway with its amount and currency."""
    entries: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for entry in ledger:
        entries[(entry["account"], entry["client_reference"])].append(entry)
    found = []
    for attempt in attempts:
        mine = entries.pop((attempt["provider_account"], attempt["client_reference"]), [])
        took = [e for e in mine if e["status"] in TOOK_EFFECT[kind]]
        what = f"{kind} attempt {attempt['client_reference']} ({attempt['state']})"
        if attempt["state"] == "Succeeded" and len(took) != 1:
            found.append(f"{what}: {len(took)} {kind}s took effect at CardCo, not 1")
        elif attempt["state"] in NO_EFFECT and took:
            found.append(f"{what}: CardCo's {took[0]['id']} is {took[0]['status']}")
        found += [f"{what}: CardCo's {e['id']} is {e['amount_minor']} {e['currency']}, the attempt "
                  f"{attempt['amount_minor']} {attempt['currency']}" for e in mine if not _same_money(e, attempt)]
    found += [f"CardCo's {kind} {e['id']} ({reference}, {e['status']}) belongs to no gateway attempt"
              for (_, reference), rest in sorted(entries.items()) for e in rest]
    return found


def ledger_payments_agree(s: Snapshot) -> list[str]:
    """Payments, both dialects: CardCo's ledger and the gateway's payment attempts agree."""
    return _ledger_agrees("payment", s.ledger_payments, s.payment_attempts)


def ledger_refunds_agree(s: Snapshot) -> list[str]:
    """Refunds: CardCo lists the refunds that succeeded; each is a Succeeded refund attempt's."""
    return _ledger_agrees("refund", s.ledger_refunds, s.refund_attempts)


def ledger_recalls_agree(s: Snapshot) -> list[str]:
    """Payout recalls: a Succeeded recall attempt's recall is ``recalled`` at CardCo."""
    return _ledger_agrees("recall", s.ledger_recalls, s.recall_attempts)


def ledger_payouts_agree(s: Snapshot) -> list[str]:
    """Payouts: the attempts agree with CardCo's ledger, and so do the payouts: a Paid payout is
    paid (or returned) at CardCo, a Failed or Cancelled one moved no money, with its amount."""
    found = _ledger_agrees("payout", s.ledger_payouts, s.payout_attempts)
    took: dict[str, list[Row]] = defaultdict(list)
    for entry in s.ledger_payouts:
        if entry["status"] in PAID_PAYOUT:
            took[_order_of(entry["client_reference"])].append(entry)
    for payout in s.payouts:
        mine = took.get(payout["payout_id"], [])
        if payout["state"] == "Paid" and not mine:
            found.append(f"payout {payout['payout_id']} is Paid, CardCo paid nothing for it")
        elif payout["state"] in ("Failed", "Cancelled") and mine:
            found.append(f"payout {payout['payout_id']} is {payout['state']}, CardCo's {mine[0]['id']} is "
                         f"{mine[0]['status']}")
        found += [f"payout {payout['payout_id']}: CardCo paid {e['amount_minor']} {e['currency']}, the payout is "
                  f"{payout['amount_minor']} {payout['currency']}" for e in mine if not _same_money(e, payout)]
    return found


def effects_certified(s: Snapshot) -> list[str]:
    """Seed 001, "The defensible claim": every Succeeded attempt's effect is certified. Its ledger
    runs unbroken (one row per sequence) through EFFECT_CONFIRMED to CERTIFIED, and its certificate
    verifies under a key the gateway publishes. It names CardCo's object for that attempt, with
    CardCo's amount and currency: evidence the gateway does not write."""
    effects = {effect["attempt_id"]: effect for effect in s.effects}
    took = {(e["account"], e["client_reference"]): e
            for kind, ledger in (("payment", s.ledger_payments), ("refund", s.ledger_refunds),
                                 ("payout", s.ledger_payouts), ("recall", s.ledger_recalls))
            for e in ledger if e["status"] in TOOK_EFFECT[kind]}
    found = []
    for attempt in (*s.payment_attempts, *s.refund_attempts, *s.payout_attempts, *s.recall_attempts):
        if attempt["state"] != "Succeeded":
            continue
        what = f"attempt {attempt['client_reference']} (Succeeded)"
        effect = effects.get(attempt["attempt_id"])
        if effect is None:
            found.append(f"{what}: no effect record")
            continue
        states = list(effect["states"] or [])
        unbroken = effect["rows"] == effect["last_sequence"]
        if not unbroken or states[-1:] != ["CERTIFIED"] or "EFFECT_CONFIRMED" not in states:
            found.append(f"{what}: its ledger is {states} over {effect['rows']} rows to sequence "
                         f"{effect['last_sequence']}, not unbroken through EFFECT_CONFIRMED to CERTIFIED")
        if effect["certificate"] is None:
            found.append(f"{what}: no certificate")
            continue
        document = {"certificate": effect["certificate"],
                    "signature": {"alg": "Ed25519", "key_id": effect["key_id"], "value": effect["signature"]}}
        verdict = verify(document, s.certificate_keys)
        if not verdict:
            found.append(f"{what}: its certificate does not verify ({verdict.reason})")
        entry = took.get((attempt["provider_account"], attempt["client_reference"]))
        claimed = effect["certificate"]
        if entry is not None and (claimed.get("provider_reference") != entry["id"] or str(
                claimed.get("amount_minor")) != str(entry["amount_minor"]) or str(
                claimed.get("currency", "")).upper() != entry["currency"].upper()):
            found.append(f"{what}: its certificate claims {claimed.get('provider_reference')} "
                         f"{claimed.get('amount_minor')} {claimed.get('currency')}, CardCo holds {entry['id']} "
                         f"{entry['amount_minor']} {entry['currency']}")
    return found


def orders_match_ledger(s: Snapshot) -> list[str]:
    """Every succeeded payment's order is Paid (PaidAfterCancel while its refund is owed and
    escalated), every refunded one's is Refunded, every order the gateway calls paid or
    refunded has its payment at CardCo (docs/decisions/0020 for the order states), and an order is
    Refunded exactly when CardCo holds a succeeded refund for it ("an order's state, its
    refunds and the ledger agree")."""
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
    refunded = {_order_of(r["client_reference"]) for r in s.ledger_refunds if r["status"] == "succeeded"}
    for order, state in sorted(orders.items()):
        if state in PAID_ORDER and order not in at_cardco:
            found.append(f"order {order} is {state} but CardCo holds no payment for it")
        if (state == "Refunded") != (order in refunded):
            found.append(f"order {order} is {state}, CardCo {'holds' if order in refunded else 'holds no'} "
                         "succeeded refund for it")
    return found


def cancellations_respected(s: Snapshot) -> list[str]:
    """An order whose cancellation the gateway accepted (``Cancelled`` or ``CancelRequested``) is
    never left charged: a payment that succeeded anyway is refunded as its own operation, or a
    person is told (seed 004, "Cancellation": "if it turns out to have succeeded, the refund is its
    own operation")."""
    orders = {o["order_id"]: o["state"] for o in s.orders}
    found = []
    for payment in s.ledger_payments:
        order = _order_of(payment["client_reference"])
        if order in s.cancelled_orders and payment["status"] == "succeeded" \
                and not s.open_escalation_naming(order):
            found.append(f"order {order}: cancellation accepted, CardCo's {payment['id']} stays succeeded, "
                         f"the order is {orders.get(order)}")
    return found


def no_send_after_cancellation(s: Snapshot) -> list[str]:
    """Seed 004, "Cancellation goes through the same lock": once a cancellation is committed no
    new send intent can be (the Started transition and every recovery intent re-check under the
    order's lock that it is still Open). Each writer takes its time before it waits for that lock,
    the cancellation after it holds it; so an intent that lock let through before the
    cancellation carries an earlier time than the cancellation's own stamp (the order's
    ``updated_at`` in the gateway's answer to the merchant), and no payment attempt of an order
    whose cancellation the campaign saw accepted may have its first send intent after that stamp
    (one clock: every process reads the same system time)."""
    committed = s.cancellations_committed
    return [f"order {a['order_id']}: attempt {a['client_reference']}'s first send intent {a['intent_at']:%H:%M:%S.%f} "
            f"came after its cancellation committed ({committed[a['order_id']]:%H:%M:%S.%f})"
            for a in s.payment_attempts
            if a["order_id"] in committed and a.get("intent_at") is not None
            and a["intent_at"] > committed[a["order_id"]]]


def no_payout_before_its_grant(s: Snapshot) -> list[str]:
    """Seed 000 (a grant is valid from ``not_before``, the payout's release time less the grant
    lead; a worker presents it no earlier): every payout create CardCo received (its request log,
    both dialects) came no earlier than the window the clerk's own release time opens, as the
    campaign asked for it, not as the gateway recorded it. One sent earlier was sent without a
    valid grant. CardCo logs milliseconds: its receive time is compared at that precision."""
    found = []
    for create in creates(s):
        payout = _order_of(create.reference) if create.kind == "payout" and create.reference else None
        opens = s.payout_windows_open.get(payout) if payout else None
        if opens is not None and create.received_at < opens.replace(microsecond=opens.microsecond // 1000 * 1000):
            found.append(f"payout {payout}: CardCo received {create.reference} at {create.received_at:%H:%M:%S.%f}, "
                         f"before its grant's window opened ({opens:%H:%M:%S.%f})")
    return found


def _business(rows: Iterable[Row]) -> list[Row]:
    """The merchant's effects among outbox rows: ordered, and no job (operator alerts have no
    ordering key)."""
    return [row for row in rows if row["ordering_key"] is not None and not row["kind"].endswith("-job")]


def sink_once_per_dedup_key(s: Snapshot) -> list[str]:
    """Every merchant effect written, each dedup key standing for one effect: a succeeded payment
    has its effect in the outbox, and the sink never got two different payloads under one key. (A
    redelivery of the same message, e.g. after a worker died between the POST and its commit, is
    what the dedup key is for; the report counts those separately.)"""
    payloads: dict[str, set[str]] = defaultdict(set)
    for message in s.sink:
        payloads[message["dedup_key"]].add(repr(sorted(message["payload"].items())))
    written = {row["ordering_key"] for row in _business(s.outbox)}
    found = [f"payment attempt {a['client_reference']} succeeded, no merchant effect was written"
             for a in s.payment_attempts if a["state"] == "Succeeded" and f"attempt:{a['attempt_id']}" not in written]
    found += [f"{key}: {len(p)} different payloads" for key, p in sorted(payloads.items()) if len(p) > 1]
    return found


def effects_delivered_or_escalated(s: Snapshot) -> list[str]:
    """Seed 004 ("Downstream Work"): every business effect reaches the merchant sink, or is
    dead-lettered and a person is told: an open escalation names its message id. A dead letter is
    no exemption; a row still pending after the settle did not arrive either. A dead
    letter the operator retried during the run is judged as the operator found it, before the
    retry (which resolves its escalation): an open escalation named it then."""
    received = {m["dedup_key"] for m in s.sink}
    found = []
    for dead, episodes in s.dead_letter_rounds:
        for row in _business(dead):
            message = str(row["message_id"])
            if not any(names(e, message) for e in episodes):
                found.append(f"outbox {message} ({row['kind']}, {row['dedup_key']}): dead-lettered, no open "
                             "escalation named it when the operator found it")
    for row in _business(s.outbox):
        what = f"outbox {row['message_id']} ({row['kind']}, {row['dedup_key']})"
        if row["dead_lettered_at"] is not None:
            if not s.open_escalation_naming(str(row["message_id"])):
                found.append(f"{what}: dead-lettered, no open escalation names it")
        elif row["dedup_key"] not in received:
            found.append(f"{what}: {'dispatched' if row['dispatched_at'] else 'pending'}, never received")
    return found


def alerts_delivered_or_logged(s: Snapshot) -> list[str]:
    """Every operator alert the dispatcher finished with reached the alert sink or, dead-lettered
    (its sink is the thing that failed), the log (``outbox_dead_lettered`` with its message id).
    Alerts still pending are fresh reminders, judged by ``outbox-not-stranded``."""
    received = {m["dedup_key"] for m in s.alerts}
    found = []
    for row in s.outbox:
        if row["ordering_key"] is not None or row["kind"].endswith("-job"):
            continue
        if row["dispatched_at"] is not None and row["dedup_key"] not in received:
            found.append(f"alert {row['message_id']} ({row['dedup_key']}): dispatched, never received")
        elif row["dead_lettered_at"] is not None and row["message_id"] not in s.logged_dead_letters:
            found.append(f"alert {row['message_id']} ({row['dedup_key']}): dead-lettered, not logged")
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
    for row in _business(s.outbox):
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
    """No outbox row left pending long past its due time (a dead letter is judged by
    ``effects-delivered-or-escalated`` and ``alerts-delivered-or-logged``)."""
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


def settled(s: Snapshot) -> list[str]:
    """Nothing is left moving: a settle that reached its deadline is a violation, with what was
    still moving then."""
    return [f"settle deadline reached: {what}" for what in s.still_moving]


def fleet_healthy(s: Snapshot) -> list[str]:
    """At the end every process is alive and every web process answers ``/readyz``."""
    return list(s.unhealthy)


def operations_as_asked(s: Snapshot) -> list[str]:
    """As many scenarios reached an outcome as were asked for (a run that did nothing fails)."""
    return [f"{what}: {s.made.get(what, 0)} of {n} reached an outcome" for what, n in sorted(s.asked.items())
            if s.made.get(what, 0) < n]


def run_steps_succeeded(s: Snapshot) -> list[str]:
    """Every fault-rule install, disruption and client call of the run did what it was asked."""
    return list(s.failed_steps)


def no_unexpected_5xx(s: Snapshot) -> list[str]:
    """The gateway answered no 5xx to a client outside an injected outage."""
    return list(s.unexpected_5xx)


CHECKS: dict[str, Callable[[Snapshot], list[str]]] = {
    "one-payment-per-order": one_payment_per_order,
    "one-refund-per-order": one_refund_per_order,
    "one-payout-per-payout": one_payout_per_payout,
    "resends-byte-identical": resends_byte_identical,
    "record-before-send": record_before_send,
    "attempts-resolved-or-escalated": attempts_resolved,
    "grants-used-or-escalated": grants_used_or_escalated,
    "ledger-payments-agree": ledger_payments_agree,
    "ledger-refunds-agree": ledger_refunds_agree,
    "ledger-payouts-agree": ledger_payouts_agree,
    "ledger-recalls-agree": ledger_recalls_agree,
    "orders-agree-with-ledger": orders_match_ledger,
    "effects-certified": effects_certified,
    "cancellation-respected": cancellations_respected,
    "no-send-after-cancellation": no_send_after_cancellation,
    "no-payout-before-its-grant": no_payout_before_its_grant,
    "sink-once-per-dedup-key": sink_once_per_dedup_key,
    "sink-in-order-per-ordering-key": sink_in_order,
    "effects-delivered-or-escalated": effects_delivered_or_escalated,
    "alerts-delivered-or-logged": alerts_delivered_or_logged,
    "webhooks-applied-or-escalated": webhooks_accounted,
    "outbox-not-stranded": outbox_not_stranded,
    "no-lease-past-expiry": no_lease_past_expiry,
    "settled": settled,
    "fleet-healthy": fleet_healthy,
    "operations-as-asked": operations_as_asked,
    "run-steps-succeeded": run_steps_succeeded,
    "no-unexpected-5xx": no_unexpected_5xx,
}


def check(snapshot: Snapshot) -> dict[str, list[str]]:
    """Every invariant with the violations found (an empty list when it holds)."""
    return {name: checker(snapshot) for name, checker in CHECKS.items()}
