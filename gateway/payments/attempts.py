"""The payment attempt repository: every write to an attempt, each one transaction in the one lock
order (order, then attempt, then escalations, events and outbox rows), each conditional on the
state and version read (seed 004, "Persisting the Attempt", "The Checkout Endpoint", "Downstream
Work"). Evidence from any source is applied by :meth:`Attempts.apply_evidence` through the pure
:func:`gateway.domain.attempts.decide`, so the endpoint, the notification handler and the
recovery loop cannot overwrite one another's results.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from gateway.clock import Clock
from gateway.domain.attempts import ORDER_CONFIRMATION, AttemptFacts, Decision, Escalation, Evidence, decide
from gateway.domain.effect_manifest import ManifestUnbuildable
from gateway.domain.errors import OrderCancelled, OrderNotFound, OrderPaid, OrderRefunded, ProviderAccountUnavailable
from gateway.domain.outcomes import AttemptState
from gateway.domain.refunds import after_payment
from gateway.effects.certify import Certifier, Subject
from gateway.effects.ledger import (
    Held,
    Read,
    advance,
    advance_record,
    kept,
    lock_record,
    lock_record_with,
    with_ledger_of_record,
)
from gateway.escalations.store import raise_escalation
from gateway.outbox.store import attempt_ordering_key, effect_rows
from gateway.payments.client import StoredRequest, payments_endpoint
from gateway.payments.evidence_lock import LOCK_FOR_EVIDENCE
from gateway.payments.leases import Lease, finish
from gateway.payments.sends import payment_intent, payment_persisted, payment_record
from gateway.providers import checkout, provider_for
from gateway.refunds.decisions import RefundPolicy, decide_after_cancel
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Cursor, Database, fetch_one, pipelined, refused
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payments")
_INSERT = with_ledger_of_record(_SQL["insert"], prefix="record_")
_MARK_STARTED = with_ledger_of_record(_SQL["mark_started"])
# The record's lock with a checkout effect's evidence, for a success certified with it (Attempts._write).
LOCK_RECORD_WITH_EVIDENCE = lock_record_with(_SQL["effect_evidence"])

Attempt = dict[str, Any]
RETRIES = 3


Written = Callable[[], Awaitable[Attempt]]  # reads an application's queued writes and finishes it
# What runs in the Started transaction with the attempt, its effect record as advanced, and the rows held.
Then = Callable[[Connection, Attempt, dict[str, Any] | None, Held], Awaitable[None]]
# The attempt's stored request (:func:`stored_request`), as columns mark_started expects unchanged.
_REQUEST = ("provider_account", "endpoint", "api_version", "idempotency_key", "request_body")
# mark_started's record columns, `record_`-prefixed in its answer.
_RECORD = ("attempt_id", "attempt_kind", "effect_digest", "idempotency_key", "sequence", "protocol_state")


class VersionConflict(Exception):
    """The attempt changed between the read under lock and the conditional write."""


class _LostToIndex(Exception):
    """A writer that skipped the order lock inserted the order's live attempt first."""


class Unexpected(VersionConflict):
    """The attempt's lock answered another row than the one the writes sent with it were decided
    on (:meth:`Attempts.apply_evidence` ``expected``): the transaction is rolled back and done
    again on the row as it is."""


def stored_request(attempt: Attempt) -> StoredRequest:
    return StoredRequest(provider_account=attempt["provider_account"], endpoint=attempt["endpoint"],
                         api_version=attempt["api_version"], idempotency_key=attempt["idempotency_key"],
                         request_body=attempt["request_body"])


def request_body(account: ProviderAccount, order: dict[str, Any], client_reference: str) -> str:
    """The exact bytes every send of the attempt carries, in the account's provider's encoding
    (gateway.providers): a payment-method token, never card data, and where 3-D Secure's redirect
    returns the customer (the order's ``return_url``, else the account's; docs/decisions/0078)."""
    return checkout(provider_for(account.id)).body(amount_minor=order["amount_minor"], currency=order["currency"],
                                                 payment_method=order["payment_method"],
                                                 client_reference=client_reference,
                                                 return_url=order.get("return_url") or account.return_url)


def facts(attempt: Attempt) -> AttemptFacts:
    return AttemptFacts(attempt_id=str(attempt["attempt_id"]), state=AttemptState(attempt["state"]),
                        provider_account=attempt["provider_account"], amount_minor=attempt["amount_minor"],
                        currency=attempt["currency"], provider_id=attempt["provider_payment_id"],
                        has_action=attempt["next_action"] is not None)


def as_started(started: Attempt) -> Attempt:
    """What ``lock_for_evidence`` answers for an attempt ``mark_started`` has just returned, if
    nothing moved since: the same row, its order still Open, its one send intent that transaction
    appended, and no other attempt owning a provider payment ID (the ``expected`` of
    :meth:`Attempts.apply_evidence` for the endpoint's own send result)."""
    return {**started, "order_state": "Open", "send_intents": 1, "provider_payment_owner": None}


async def retry_transaction(work: Any, retries: int = RETRIES) -> Any:
    """Run ``work()`` (one whole transaction) again on a deadlock or a lost conditional write, a
    bounded number of times; never part of one. The last failure surfaces to the caller."""
    for attempt in range(retries):
        try:
            return await work()
        except (psycopg.errors.DeadlockDetected, VersionConflict):
            if attempt == retries - 1:
                raise
    raise RuntimeError("unreachable")


class Attempts:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings
        self._certifier = Certifier.of(settings)
        self._refund_policy = RefundPolicy.of(settings)

    def _account(self, account_id: str) -> ProviderAccount:
        account = self._settings.account(account_id)
        if account is None:
            raise ProviderAccountUnavailable(f"provider account {account_id} is not configured")
        return account

    async def get(self, attempt_id: uuid.UUID) -> Attempt:
        row = await self._db.fetch_one(_SQL["get"], {"attempt_id": attempt_id})
        if row is None:
            raise LookupError(f"attempt {attempt_id} does not exist")
        return row

    async def latest_for_order(self, order_id: str) -> Attempt | None:
        return await self._db.fetch_one(_SQL["latest_for_order"], {"order_id": order_id})

    async def get_or_create_live(self, order_id: str, customer_id: str) -> Attempt:
        """Lock the order, refuse a paid, cancelled or foreign order, return its live attempt or
        insert attempt N+1 with a fresh key, the exact request and next_check_at = created_at +
        abandonment threshold (seed 004, PayAsync's first transaction), its effect record written by
        the same statement and the COMMIT sent with it. An insert that lost to a writer that skipped
        the order lock wrote nothing, neither attempt nor record, so its transaction ends with
        nothing to roll back, and the winner is read in a new statement (seed 004: "Roll back and
        reload the winning attempt"):
        the order's latest attempt, which is the winner even once it is no longer live (a fast
        answer or a recovery pass may resolve it before this read, as the fault campaign showed)."""
        try:
            return await self._get_or_create_live(order_id, customer_id)
        except _LostToIndex:
            winner = await self.latest_for_order(order_id)
            if winner is None:
                raise VersionConflict("the attempt that won the index could not be read") from None
            return winner

    async def _get_or_create_live(self, order_id: str, customer_id: str) -> Attempt:
        async with self._db.transaction() as conn:
            order = await fetch_one(conn, _SQL["lock_order_for_checkout"], {"order_id": order_id})
            if order is None or order["customer_id"] != customer_id:
                raise OrderNotFound()
            if order["state"] == "Paid":
                paid = await fetch_one(conn, _SQL["succeeded_for_order"], {"order_id": order_id})
                raise OrderPaid(attempt=paid)
            if order["state"] == "Refunded":
                raise OrderRefunded()
            live = None if order["live_attempt_id"] is None else await fetch_one(
                conn, _SQL["live_for_order"], {"order_id": order_id})
            if order["state"] != "Open" and (live is None or live["state"] == "NotStarted"):
                # A cancellation committed first: no new attempt, and a NotStarted one never starts.
                raise OrderCancelled()
            if live is not None:
                return live
            attempt, insert = await self._insert(conn, order)
        # Read once committed: the insert went with the COMMIT (one round trip for both).
        inserted = await insert.fetchone()
        if inserted is None:
            raise _LostToIndex()
        if not inserted.pop("record_inserted"):
            await self._record_conflict(attempt)
        return inserted

    async def _insert(self, conn: Connection, order: dict[str, Any]) -> tuple[dict[str, Any], Cursor]:
        """Send the insert of attempt N+1 with its effect record (queries.sql ``insert``), unread."""
        account = self._account(order["provider_account"])
        now = self._clock.now()
        number = int(order["next_attempt_number"])
        client_reference = f"{order['order_id']}-a{number}"
        attempt = {
            "attempt_id": uuid.uuid4(), "order_id": order["order_id"], "customer_id": order["customer_id"],
            "attempt_number": number, "client_reference": client_reference,
            "provider_account": account.id, "endpoint": payments_endpoint(account),
            "api_version": account.api_version, "idempotency_key": str(uuid.uuid4()),
            "request_body": request_body(account, order, client_reference), "amount_minor": order["amount_minor"],
            "currency": order["currency"], "now": now,
            "next_check_at": now + timedelta(seconds=account.abandonment_threshold_s),
        }
        # Seed 001: the effect record commits with the attempt that makes it sendable. It is
        # derived from the values the insert carries and written by the same statement.
        return attempt, await conn.execute(_INSERT, attempt | payment_record(attempt, stored_request(attempt),
                                                                                      now=now))

    async def _record_conflict(self, attempt: dict[str, Any]) -> None:
        """The attempt committed but its effect record did not (another is stored for it or under its
        key): compared and escalated as :func:`gateway.effects.ledger.kept` does; the send gate
        refuses every send of the attempt whose record is not its own."""
        async with self._db.transaction() as conn:
            await kept(conn, payment_intent(stored_request(attempt), attempt["attempt_id"]), self._clock.now(),
                       self._settings.reminder_interval_s)

    async def mark_started(self, attempt: Attempt, actor: str = "endpoint", *,
                           then: Then | None = None) -> Attempt | None:
        """NotStarted -> Started with its send_intent (see queries.sql ``mark_started``); ``then``
        runs in the same transaction once it started, with the attempt's effect record as locked
        and advanced here (the endpoint opens the send gate there), and that advance's ledger row
        held, so that the rows ``then`` appends go with it in one statement.

        The record is expected as the attempt's insert wrote it (INTENT_PERSISTED) and the stored
        request as the attempt was read: the advance and ``then`` run first on that record, and
        their rows go with the transition, which locks the record and appends them only if both
        are exactly those; anything else and the statement refuses itself, so nothing commits
        (``paygate_refuse``). The answer is therefore read after the COMMIT it went with: one
        round trip. Refused, the transaction is done again expecting nothing: its statement locks
        the record and answers it as it stands, and the advance and ``then`` run on that record
        (``then`` runs again: it must only add rows to ``held``), their rows appended before the
        COMMIT.

        None means a confirmed miss: another writer moved the attempt, or the order is no longer
        payable. A database failure or an unconfirmed commit raises: the caller reloads."""
        try:
            return await self._mark_started(attempt, actor, then, expected=_persisted(attempt, self._clock.now()))
        except Unexpected:
            return await self._mark_started(attempt, actor, then, expected=None)

    async def _mark_started(self, attempt: Attempt, actor: str, then: Then | None, *,
                            expected: dict[str, Any] | None) -> Attempt | None:
        account = self._account(attempt["provider_account"])
        now = self._clock.now()
        try:
            async with self._db.transaction() as conn:
                held = Held()
                if expected is not None:  # seed 001: INTENT_PERSISTED -> AUTHORIZATION_ISSUED, then ``then``'s
                    await self._advance_started(conn, attempt, expected, actor, now, held, then)
                marked = await conn.execute(_MARK_STARTED, {
                    "attempt_id": attempt["attempt_id"], "order_id": attempt["order_id"],
                    "version": attempt["version"], "now": now, "actor": actor,
                    "escalation_deadline": now + timedelta(
                        seconds=account.key_window_s - account.escalation_safety_margin_s),
                    "next_check_at": now + timedelta(seconds=account.call_budget_s + account.record_budget_s
                                                     + account.processing_allowance_s),
                    "entries": held.rows(), **{column: attempt[column] for column in _REQUEST}, **_expecting(expected)})
                if expected is None:
                    return await self._started_on_record(conn, await marked.fetchone(), actor, now, then)
        except psycopg.Error as error:
            if refused(error):
                raise Unexpected(f"attempt {attempt['attempt_id']}: its record or stored request is not as read") \
                    from None
            raise
        started = await marked.fetchone()
        if started is not None:
            _record_of(started)
        return started

    async def _started_on_record(self, conn: Connection, started: Attempt | None, actor: str, now: datetime,
                                 then: Then | None) -> Attempt | None:
        """The Started step and ``then`` on the record ``mark_started`` locked, as it answered it."""
        if started is None:
            return None
        record = _record_of(started)
        held = Held()
        await self._advance_started(conn, started, record, actor, now, held, then)
        await held.send(conn)
        return started

    async def _advance_started(self, conn: Connection, attempt: Attempt, record: dict[str, Any] | None, actor: str,
                               now: datetime, held: Held, then: Then | None) -> None:
        """The Started step of the attempt's effect ``record`` (seed 001) and ``then``, their rows
        added to ``held``."""
        advanced = await advance_record(conn, attempt["attempt_id"], "Started", actor=actor, now=now,
                                        read=Read(record), held=held)
        if then is not None:
            await then(conn, attempt, advanced, held)

    async def record_response(self, attempt_id: uuid.UUID, evidence: Evidence, actor: str) -> Attempt:
        """Record the answer to a send: a send_result event plus the evidence, in one transaction."""
        return await self.apply_evidence(attempt_id, evidence, actor=actor, kind="send_result")

    async def apply_evidence(self, attempt_id: uuid.UUID, evidence: Evidence, *, actor: str,
                             kind: str | None, conn: Connection | None = None, lease: Lease | None = None,
                             locked: Attempt | None = None, expected: Attempt | None = None) -> Attempt:
        """Apply ``evidence`` to the attempt as it stands, under the order and attempt locks,
        appending a ``kind`` event (send_result, lookup; None when the caller recorded its own,
        like a notification). With ``conn`` it joins the caller's transaction and does not retry.

        With a recovery ``lease``, the same transaction also finishes the pass: an outcome that
        leaves the attempt unresolved (or escalates) schedules it and releases the lease, a
        resolution releases the lease if it is still this worker's. A provider outcome stays valid
        evidence after the lease expired, so it is applied under the state rules alone.

        ``locked``: the attempt as the caller's transaction already locked it, ``lock_for_evidence``'s
        row (a notification locks it in the statement that records it, docs/decisions/0049).

        ``expected`` (with ``conn``): the row the caller expects the lock to answer
        (:func:`as_started`). The writes decided on it are sent with the lock, one round trip
        for both, and the lock's row is compared with it before anything reads their results: a
        row that differs in any column raises :class:`Unexpected` (a VersionConflict), so the
        caller's transaction rolls back and is done again without ``expected``. The writes that
        commit are thus always those decided on the row the lock answered."""
        if conn is not None:
            if expected is not None and locked is None:
                return await (await self._send_expected(conn, attempt_id, evidence, actor, kind, expected))()
            return await (await self._send(conn, attempt_id, evidence, actor, kind, lease, locked))()

        async def once() -> Attempt:
            async with self._db.transaction() as own:
                return await (await self._send(own, attempt_id, evidence, actor, kind, lease, None))()

        result: Attempt = await retry_transaction(once)
        return result

    async def send_evidence(self, conn: Connection, attempt_id: uuid.UUID, evidence: Evidence, *, actor: str,
                            locked: Attempt) -> Written:
        """:meth:`apply_evidence` in the caller's transaction on the attempt ``locked`` there, in two
        halves: this one decides and queues the writes in the connection's pipeline without reading
        any result, the returned call reads them (VersionConflict if the write missed) and does
        what follows, so several attempts' writes travel in one round trip (a batch of
        notifications, docs/decisions/0080). Nothing else may run on ``conn`` between the two."""
        return await self._send(conn, attempt_id, evidence, actor, None, None, locked)

    async def _send(self, conn: Connection, attempt_id: uuid.UUID, evidence: Evidence, actor: str,
                    kind: str | None, lease: Lease | None, locked: Attempt | None) -> Written:
        now = self._clock.now()
        attempt = locked or await fetch_one(conn, LOCK_FOR_EVIDENCE, {
            "attempt_id": attempt_id, "evidence_payment_id": evidence.provider_id})
        if attempt is None:
            raise LookupError(f"attempt {attempt_id} does not exist")
        decision = _decided(attempt, evidence)
        if decision.escalation is not None and decision.new_state is None:
            if kind is not None:
                await self._event(conn, attempt_id, kind, actor, now, _evidence_detail(evidence, decision))
            await self._escalate(conn, attempt, decision.escalation, evidence, now)
            if lease is not None:
                await finish(conn, attempt_id, lease, now, lease.escalated_delay_s)
            return functools.partial(_as_is, attempt)
        return await self._write(conn, attempt, decision, evidence, actor, kind, now, lease)

    async def _send_expected(self, conn: Connection, attempt_id: uuid.UUID, evidence: Evidence, actor: str,
                             kind: str | None, expected: Attempt) -> Written:
        """:meth:`_send` with the writes decided on ``expected`` and sent with the lock (see
        :meth:`apply_evidence`); an escalation alone is decided on the locked row, as in
        :meth:`_send`."""
        decision = _decided(expected, evidence)
        if decision.escalation is not None and decision.new_state is None:
            return await self._send(conn, attempt_id, evidence, actor, kind, None, None)
        now = self._clock.now()
        async with pipelined(conn):
            lock = await conn.execute(LOCK_FOR_EVIDENCE, {"attempt_id": attempt_id,
                                                          "evidence_payment_id": evidence.provider_id})
            written = await self._write(conn, expected, decision, evidence, actor, kind, now, None)
        locked = await lock.fetchone()
        if locked is None or any(column not in expected or expected[column] != value
                                 for column, value in locked.items()):
            raise Unexpected(f"attempt {attempt_id} is not as expected under its lock")
        return written

    async def _write(self, conn: Connection, attempt: Attempt, decision: Decision, evidence: Evidence,
                     actor: str, kind: str | None, now: datetime, lease: Lease | None) -> Written:
        """Every write the decision implies as ONE statement (queries.sql ``write_evidence``,
        docs/decisions/0048), each part switched by a parameter and hanging on the conditional
        update, so one that missed writes none of it (VersionConflict): the update (a recorded
        state writes its provider status, NULL included: keeping requires_action on an Unknown
        attempt would show what the state contradicts); the ``evidence_kind`` event and the
        ``transition`` event; the order settled (``order_state``) or its requested cancellation
        completed (``cancel_order``); the effect-keyed outbox rows; the open escalations closed
        when it ``resolves``; and a recovery lease, if still this worker's, released
        (``lease_mode`` 'release') or also scheduled (``finish``: unexpired only), in the same
        update since one statement may not update a row twice. The effect record's lock, the
        last one taken, travels in the same pipeline; a success's lock also reads its certificate's
        evidence (``effect_evidence`` in ``lock_record_with_evidence``, after the writes: it sees
        their event), whoever brought the evidence (the endpoint, a notification, recovery), so
        the certificate reads nothing itself."""
        attempt_id = attempt["attempt_id"]
        state = AttemptState(decision.new_state or attempt["state"])
        payment_id = attempt["provider_payment_id"] or (evidence.provider_id if decision.record_provider_id else None)
        # A success on a cancelled order settles it as PaidAfterCancel, tells the
        # merchant so instead of confirming it, and owes a refund (gateway.domain.refunds).
        newly_paid = state is AttemptState.SUCCEEDED and attempt["state"] != state
        settlement = after_payment(attempt["order_state"]) if newly_paid else None
        effects = [settlement.confirmation if settlement and effect == ORDER_CONFIRMATION else effect
                   for effect in decision.effects]
        owes_refund = settlement is not None and settlement.refund_owed
        outbox = effect_rows([(f"attempt:{attempt_id}:{effect}", effect) for effect in effects],
                             _effect_payload(attempt, payment_id)) if effects else None
        # Seed 001: the protocol follows the attempt (an Unknown kept after a reconciling
        # resend is a step too); its record's lock travels with the writes (docs/decisions/0031),
        # unless a refund decision takes its locks first.
        follows = state != attempt["state"] or state is AttemptState.UNKNOWN
        async with pipelined(conn):
            applied = await conn.execute(_SQL["write_evidence"], {
                "attempt_id": attempt_id, "version": attempt["version"], "state": state.value,
                "outcome_reason": decision.outcome_reason if decision.new_state else attempt["outcome_reason"],
                "provider_payment_id": payment_id, "provider_status": decision.provider_status,
                "set_provider_status": decision.sets_status,
                "store_action": decision.store_action, "clear_action": decision.clear_action,
                "next_action": Jsonb(evidence.next_action) if evidence.next_action is not None else None,
                "next_action_expires_at": evidence.next_action_expires_at,
                "next_check_at": None if decision.resolves else (
                    now if decision.look_up_now else self._next_check(attempt, state, evidence, now)),
                "now": now, "actor": actor, "evidence_kind": kind,
                "evidence_detail": Jsonb(_evidence_detail(evidence, decision)) if kind is not None else None,
                "transition": Jsonb({"from": attempt["state"], "to": state.value, "reason": decision.outcome_reason})
                if state != attempt["state"] else None,
                "order_state": settlement.order_state if settlement is not None else None,
                "cancel_order": state in (AttemptState.FAILED, AttemptState.NOT_APPLIED),
                "ordering_key": attempt_ordering_key(attempt_id), "outbox": outbox,
                "resolves": decision.resolves, "note": f"attempt {state.value}",
                **_lease_params(lease, decision, now)})
            locks = follows and not owes_refund
            certifying = locks and state is AttemptState.SUCCEEDED
            record = await conn.execute(LOCK_RECORD_WITH_EVIDENCE, {"attempt_id": attempt_id}) if certifying \
                else await lock_record(conn, attempt_id) if locks else None
        return functools.partial(self._written, conn, attempt, decision, evidence, actor, now, state, applied, record,
                                 owes_refund, follows, certifying)

    async def _written(self, conn: Connection, attempt: Attempt, decision: Decision, evidence: Evidence, actor: str,
                       now: datetime, state: AttemptState, applied: Cursor, record: Cursor | None, owes_refund: bool,
                       follows: bool, certifying: bool = False) -> Attempt:
        """The second half of :meth:`_write`: its results read, and what follows them."""
        attempt_id = attempt["attempt_id"]
        updated = await applied.fetchone()
        if updated is None:
            raise VersionConflict(f"attempt {attempt_id} changed under its lock")
        if owes_refund:
            await decide_after_cancel(conn, now, self._refund_policy, attempt["order_id"])
        if decision.escalation is not None:
            await self._escalate(conn, updated, decision.escalation, evidence, now)
        if follows:  # a confirmed effect is certified here
            read, evidence_ids = None, None
            if certifying and record is not None:  # the record's lock answered the evidence too
                row = await record.fetchone()
                evidence_ids = row.pop("evidence_event_ids") if row is not None else None
                read = Read(row)
            await advance(conn, attempt_id, state.value, actor=actor, now=now, certifier=self._certifier,
                          subject=Subject("order_id", updated["order_id"], updated["provider_payment_id"],
                                          updated["provider_status"], _SQL["effect_evidence"], evidence_ids),
                          locked=record, read=read)
        return updated

    def _next_check(self, attempt: Attempt, state: AttemptState, evidence: Evidence, now: datetime) -> datetime:
        """When recovery next looks at an attempt this outcome leaves unresolved."""
        account = self._settings.account(attempt["provider_account"])
        first_backoff = account.lookup_backoff_s[0] if account else 60.0
        if state is AttemptState.STARTED and evidence.finding == "processing" and account:
            return now + timedelta(seconds=account.processing_allowance_s)
        later = now + timedelta(seconds=first_backoff)
        expiry = evidence.next_action_expires_at
        return min(later, expiry) if expiry and expiry > now else later

    async def _escalate(self, conn: Connection, attempt: Attempt, escalation: Escalation, evidence: Evidence,
                        now: datetime) -> None:
        await raise_escalation(conn, escalation_key=escalation.key, reason=escalation.reason,
                               now=now, reminder_interval_s=self._settings.reminder_interval_s,
                               attempt_id=attempt["attempt_id"], details={
                                   "client_reference": attempt["client_reference"],
                                   "provider_payment_id": attempt["provider_payment_id"],
                                   "evidence_provider_payment_id": evidence.provider_id,
                                   "evidence_account": evidence.provider_account,
                                   "evidence_amount_minor": evidence.amount_minor,
                                   "evidence_currency": evidence.currency,
                                   "evidence_finding": evidence.finding, **evidence.details})

    async def _event(self, conn: Connection, attempt_id: uuid.UUID, kind: str, actor: str, now: datetime,
                     detail: dict[str, Any]) -> None:
        await conn.execute(_SQL["append_event"], {"attempt_id": attempt_id, "now": now, "kind": kind,
                                                  "actor": actor, "detail": Jsonb(detail)})


async def _as_is(attempt: Attempt) -> Attempt:
    return attempt


def _persisted(attempt: Attempt, now: datetime) -> dict[str, Any] | None:
    """The attempt's effect record as its insert wrote it (:func:`payment_record`), or None when
    its stored request does not read as an effect (the send gate refuses it then)."""
    try:
        return payment_persisted(attempt, stored_request(attempt), now=now)
    except ManifestUnbuildable:
        return None


def _expecting(record: dict[str, Any] | None) -> dict[str, Any]:
    """``mark_started``'s ``expected_*`` parameters: the record its rows are for (NULLs: none)."""
    if record is None:
        return {"expected_sequence": None, "expected_state": None, "expected_digest": None, "expected_key": None}
    return {"expected_sequence": record["sequence"], "expected_state": record["protocol_state"],
            "expected_digest": record["effect_digest"], "expected_key": record["idempotency_key"]}


def _record_of(started: Attempt) -> dict[str, Any] | None:
    """Takes ``mark_started``'s own columns out of its answer: the record as locked (None for none)."""
    record = {column: started.pop(f"record_{column}") for column in _RECORD}
    del started["as_expected"]
    return record if record["attempt_id"] is not None else None


def _decided(attempt: Attempt, evidence: Evidence) -> Decision:
    """What ``evidence`` does to ``attempt`` as ``lock_for_evidence`` answered it."""
    decision = decide(facts(attempt), evidence, only_send=attempt["send_intents"] == 1)
    if decision.record_provider_id and attempt["provider_payment_owner"] is not None:
        # Recording it would make the ID name two attempts: keep both as they are and
        # investigate (seed 004: "proof of nothing about either payment").
        decision = Decision(escalation=Escalation(
            f"attempt:{attempt['attempt_id']}:provider-id-conflict", "provider-id-conflict"))
    return decision


def _evidence_detail(evidence: Evidence, decision: Decision) -> dict[str, Any]:
    """What the history keeps of evidence: identifiers, amounts, statuses, reasons; no payloads."""
    return {key: value for key, value in {
        "finding": evidence.finding, "reason": evidence.reason, "provider_account": evidence.provider_account,
        "provider_payment_id": evidence.provider_id, "provider_status": evidence.provider_status,
        "amount_minor": evidence.amount_minor, "currency": evidence.currency,
        "decision": decision.new_state or ("escalate" if decision.escalation else "keep"),
        **{k: v for k, v in evidence.details.items() if isinstance(v, (str, int, float, bool))},
    }.items() if value is not None}


def _lease_params(lease: Lease | None, decision: Decision, now: datetime) -> dict[str, Any]:
    """``write_evidence``'s lease part: a resolution releases the lease; an outcome that leaves the
    attempt unresolved also schedules the next look, an escalated attempt on the slower read-only
    cadence. None of it unless the lease is still this worker's (checked in the statement)."""
    if lease is None:
        return {"lease_mode": None, "lease_owner": None, "lease_token": None, "lease_next_check_at": None}
    delay = lease.escalated_delay_s if decision.escalation else lease.next_delay_s
    return {"lease_mode": "release" if decision.resolves else "finish", "lease_owner": lease.owner,
            "lease_token": lease.token, "lease_next_check_at": now + timedelta(seconds=delay)}


def _effect_payload(attempt: Attempt, provider_payment_id: str | None) -> dict[str, Any]:
    return {"order_id": attempt["order_id"], "attempt_id": str(attempt["attempt_id"]),
            "customer_id": attempt["customer_id"], "amount_minor": attempt["amount_minor"],
            "currency": attempt["currency"], "provider_payment_id": provider_payment_id,
            "client_reference": attempt["client_reference"]}

