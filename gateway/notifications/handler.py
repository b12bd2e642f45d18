"""The notification handler (seed 004, "The Notification Handler", whose C# is the reference flow;
"Notification Deduplication"; "Escalations").

:meth:`NotificationHandler.verify` decides who signed a delivery (nothing is written for a
rejection). A delivery whose key this process saw committed is a duplicate answered without the
database (:class:`CommittedKeys`, docs/decisions/0064). Otherwise :meth:`NotificationHandler.handle`
does everything in ONE transaction: find the attempt by verified account + client reference and by
account + provider payment id independently; record the notification (a keyed duplicate returns
before any transition, alert or outbox row); then escalate an identity conflict, an unmatched or
unreadable notification or one rendered in an API version the account does not pin, or apply it
through :meth:`Attempts.apply_evidence`, the conditional
transition every writer shares (``payout.*`` through ``gateway.payouts.notifications.apply``, the
payouts aggregate's own; a ``payment.refunded`` naming a refund the gateway made through
``gateway.refunds.notifications``). Which matchers place a readable notification, and so how it is
applied, is one table by notification kind (``_MATCHERS``). The caller acknowledges only after this
returns, i.e. after the commit.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

import structlog

from gateway.clock import Clock
from gateway.domain.attempts import Evidence
from gateway.domain.errors import WebhookEndpointNotFound
from gateway.domain.notification_keys import escalation_key, notification_key
from gateway.domain.provider_evidence import Notification, Unreadable, object_evidence, refund_evidence
from gateway.domain.webhook_verdicts import Rejected, Verified
from gateway.escalations.store import raise_escalation
from gateway.notifications import repository
from gateway.notifications.committed_keys import CommittedKeys, KeysInFlight
from gateway.payments.attempts import Attempts, VersionConflict, retry_transaction
from gateway.payouts import notifications as payout_notifications
from gateway.providers import Provider, provider_for
from gateway.refunds import notifications as refund_notifications
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Database, savepoint
from gateway.store.group_commit import GroupCommit

log = structlog.get_logger("gateway.notifications")
ACTOR = "notification-handler"
# In a shared transaction a delivery that would wait longer for a lock is done alone after it.
INGEST_BATCH_LOCK_WAIT_MS = 100
Outcome = Literal["duplicate", "applied", "unmatched", "identity-conflict", "unreadable", "held"]


@dataclass(frozen=True)
class Handled:
    outcome: Outcome
    notification_event_id: int | None = None
    attempt_id: UUID | None = None


@dataclass(frozen=True)
class _Context:
    """What every step of one handling needs."""

    account: ProviderAccount
    key: str | None
    webhook_id: str
    connected_unconfigured: bool = False  # about a connected account no configured account takes


Unit = tuple[_Context, Notification | Unreadable]  # one verified delivery, parsed
Apply = Callable[[Connection, int], Awaitable[None]]  # (transaction, notification_event_id)


@dataclass(frozen=True)
class _Found:
    """Where a matcher placed a notification (seed 004, "The Notification Handler"): the attempt
    its evidence applies to with that attempt's applier, or the two different attempts its
    identifiers name (evidence applied to neither), or nothing. ``recorded`` when the matcher
    recorded the notification in its own statement (docs/decisions/0049); otherwise the handler
    records it, naming the aggregate's attempt in ``field``."""

    attempt_id: UUID | None = None
    apply: Apply | None = None
    conflict: tuple[str, str] | None = None  # (by reference, by provider id) attempt ids
    conflict_attempt: UUID | None = None  # the payment attempt a conflict's escalation is attached to
    recorded: repository.Recorded | repository.Duplicate | None = None
    field: str = "payout_attempt_id"
    locked: dict[str, Any] | None = None  # the payment attempt as the recording statement locked it


class NotificationHandler:
    def __init__(self, db: Database, clock: Clock, settings: Settings, attempts: Attempts) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings
        self._attempts = attempts
        self._committed = CommittedKeys(settings.notification_keys_remembered)
        self._in_flight = KeysInFlight()
        # With ingest_batch_max > 1 (the default), deliveries that arrive while others are being
        # committed share a transaction, pipelined (docs/decisions/0080); each is acknowledged only
        # after the one that did it commits.
        self._group: GroupCommit[Unit, Handled] | None = GroupCommit(
            db, self._in_transaction, max_batch=settings.ingest_batch_max, lanes=settings.ingest_batch_lanes,
            lock_wait_ms=INGEST_BATCH_LOCK_WAIT_MS, backlog=settings.ingest_batch_backlog,
            batch=self._pipelined if settings.ingest_batch_mode == "pipelined" else None,
        ) if settings.ingest_batch_max > 1 else None
        # Per endpoint, per provider: the verification material of each account (decoded once).
        self._endpoints: dict[str, dict[str, tuple[Provider, list[Any]]]] = {}
        for account in settings.provider_accounts:
            provider = provider_for(account.id)
            by_provider = self._endpoints.setdefault(account.webhook_endpoint_id, {})
            by_provider.setdefault(provider.name, (provider, []))[1].append(provider.verifier(account))

    def verify(self, endpoint_id: str, headers: Mapping[str, str], body: bytes) -> Verified | Rejected:
        """Which of the endpoint's accounts signed the delivery, each provider checking its own
        signature scheme; WebhookEndpointNotFound if none is configured. With several providers
        on one endpoint, the first rejection is reported when none verifies."""
        providers = self._endpoints.get(endpoint_id)
        if providers is None:
            raise WebhookEndpointNotFound()
        rejections: list[Rejected] = []
        for provider, keys in providers.values():
            verified = provider.verify(headers, body, keys, self._clock.now())
            if isinstance(verified, Verified):
                return verified
            rejections.append(verified)
        return rejections[0]

    async def handle(self, verified: Verified, body: bytes) -> Handled:
        """Record and handle one verified delivery; raises if it could not be recorded."""
        account = self._settings.account(verified.account_id)
        if account is None:
            raise LookupError(f"provider account {verified.account_id} is no longer configured")
        provider = provider_for(account.id)
        parsed = provider.parse(body)
        connected_unconfigured = False
        if isinstance(parsed, Notification):
            # A Connect endpoint delivers the platform's events and its connected accounts' (the
            # event's ``account``): each belongs to the account configured for it, never to another.
            owner = self._settings.connected_account(account.webhook_endpoint_id, provider.name,
                                                     parsed.connected_account)
            account, connected_unconfigured = (owner, False) if owner is not None else (account, True)
        key = notification_key(
            event_id=parsed.event_id, webhook_id=verified.webhook_id,
            fields=parsed.canonical_fields() if isinstance(parsed, Notification) else None,
            synthesize=account.synthesized_notification_keys, webhook_id_stable=account.webhook_id_stable)
        # Recorded and committed (maybe by a first delivery still in flight here a moment ago): the
        # database would say duplicate too.
        if self._committed.holds(account.id, key) or (
                await self._in_flight.wait_for_first(account.id, key) and self._committed.holds(account.id, key)):
            log.info("notification_handled", outcome="duplicate", provider_account=account.id, notification_key=key,
                     webhook_id=verified.webhook_id, remembered=True)
            return Handled("duplicate")
        with self._in_flight.recording(account.id, key):
            unit = (_Context(account, key, verified.webhook_id, connected_unconfigured), parsed)
            # Answered once the transaction that did it has committed; one that deadlocked (or
            # whose write missed under its lock) is done again, its record with it.
            run = self._alone if self._group is None else self._group.run
            handled: Handled = await retry_transaction(lambda: run(unit))
            self._committed.committed(account.id, key)  # after COMMIT only: recorded here or by another
        log.info("notification_handled", outcome=handled.outcome, provider_account=account.id,
                 notification_event_id=handled.notification_event_id, notification_key=key,
                 attempt_id=str(handled.attempt_id) if handled.attempt_id else None, webhook_id=verified.webhook_id)
        return handled

    async def _alone(self, unit: Unit) -> Handled:
        """One delivery in its own transaction; a deadlock (or a write that missed under its lock)
        rolls the whole of it back, the record included, and :meth:`handle` does it again."""
        async with self._db.transaction() as conn:
            return await self._in_transaction(conn, unit)

    async def _pipelined(self, conn: Connection, units: list[Unit]) -> list[Handled | None]:
        """A batch of deliveries in ``conn``'s transaction, in phases (docs/decisions/0080): every
        batched one's ``identify_and_record`` sent, then read; the evidence decisions made in
        Python on the attempts those statements locked and all their writes sent, then read and
        finished; one COMMIT after. Three round trips for the batch. Batched are only readable
        payment notifications with a key, about the account that verified them, in its API
        version, naming no refund, whose client reference and payment id no other in the batch
        names (two of one attempt would decide on the same locked version); the others (None) are
        done alone after the commit. Any error fails the batch and each is done again alone
        (GroupCommit), where a recording this one committed is found by its key."""
        batched: list[int] = []
        names: set[tuple[str, str]] = set()
        for index, (context, parsed) in enumerate(units):
            named = _batchable(context, parsed)
            if named is not None and not named & names:
                names |= named
                batched.append(index)
        sent = []
        for index in batched:
            context, parsed = units[index]
            if not isinstance(parsed, Notification):
                raise TypeError("only readable notifications are batched")
            keys, detail = _keys_and_detail(context, parsed)
            identify = await repository.send_identify(conn, self._identify(context, parsed, keys, detail))
            sent.append((index, context, parsed, keys, detail, identify))
        results: list[Handled | None] = [None] * len(units)
        writes = []
        for index, context, parsed, keys, detail, identify in sent:
            found = self._payment_found(context, parsed, await repository.read_identified(identify, context.key))
            recorded = found.recorded
            if found.locked is None or not isinstance(recorded, repository.Recorded) or found.attempt_id is None:
                results[index] = await self._placed(conn, context, parsed, keys, detail, found)
                continue
            evidence = _evidence(context.account.id, parsed, recorded.event_id, context.key)
            written = await self._attempts.send_evidence(conn, found.attempt_id, evidence, actor=ACTOR,
                                                         locked=found.locked)
            writes.append((index, written, Handled("applied", recorded.event_id, found.attempt_id)))
        for index, written, handled in writes:
            await written()
            results[index] = handled
        return results

    async def _in_transaction(self, conn: Connection, unit: Unit) -> Handled:
        context, parsed = unit
        if isinstance(parsed, Unreadable):
            return await self._unreadable(conn, context, parsed)
        if context.connected_unconfigured:
            # Recorded under the account that verified it, escalated, never applied to it.
            return await self._held(conn, context, parsed, "connected-account", "notification-connected-account", {
                "connected_account": parsed.connected_account, "configured_stripe_account":
                context.account.stripe_account})
        if parsed.api_version is not None and parsed.api_version != context.account.api_version:
            # Rendered in another version than the account pins: its objects may mean something else.
            return await self._held(conn, context, parsed, "api-version", "notification-api-version", {
                "api_version": parsed.api_version, "configured_api_version": context.account.api_version})
        return await self._readable(conn, context, parsed)

    def takes(self, provider_account: str, notification: Notification) -> bool:
        """Whether ``provider_account`` may take ``notification``: the connected account it
        happened on (None: the platform's own) is the one the account names."""
        account = self._settings.account(provider_account)
        return account is not None and account.stripe_account == notification.connected_account

    def remembers(self, provider_account: str, key: str) -> bool:
        """Whether this process answers ``key`` of ``provider_account`` as a duplicate without the
        database (it saw its recording committed)."""
        return (provider_account, key) in self._committed

    async def _unreadable(self, conn: Connection, context: _Context, parsed: Unreadable) -> Handled:
        esc_key = escalation_key(context.account.id, "unreadable", notification_key=context.key,
                                 provider_object_id=None, client_reference=None)
        detail = {**parsed.detail(), "webhook_id": context.webhook_id, "escalation_key": esc_key}
        recorded = await self._record(conn, context, None, detail)
        if isinstance(recorded, repository.Duplicate):
            return Handled("duplicate")
        await self._raise(conn, esc_key, "unreadable-notification", None, {
            "provider_account": context.account.id, "notification_event_id": recorded.event_id,
            "provider_event_id": parsed.event_id, "notification_key": context.key, "type": parsed.event_type,
            "unreadable": parsed.reason})
        return Handled("unreadable", recorded.event_id)

    async def _held(self, conn: Connection, context: _Context, parsed: Notification, problem: str, reason: str,
                    facts: dict[str, Any]) -> Handled:
        """A readable event the account must not apply as it stands: rendered in an API version the
        account does not pin (its webhook endpoint was created with, or upgraded to, another one),
        or about a connected account no account is configured for (a Connect endpoint's event is
        never applied to the platform's account). Recorded as it came and escalated (``reason``),
        never applied; an operator who has checked it applies it from the store
        (POST /v1/ops/notifications/{id}/apply), and recovery's lookups resolve attempts meanwhile."""
        account_id = context.account.id
        esc_key = escalation_key(account_id, problem, notification_key=context.key,
                                 provider_object_id=parsed.provider_object_id, client_reference=parsed.client_reference)
        recorded = await self._record(conn, context, None, {
            **parsed.detail(), "webhook_id": context.webhook_id, "escalation_key": esc_key})
        if isinstance(recorded, repository.Duplicate):
            return Handled("duplicate")
        await self._raise(conn, esc_key, reason, None, {
            "provider_account": account_id, "notification_event_id": recorded.event_id,
            "provider_event_id": parsed.event_id, "notification_key": context.key, "type": parsed.event_type,
            "client_reference": parsed.client_reference, "provider_payment_id": parsed.provider_object_id, **facts})
        return Handled("held", recorded.event_id)

    async def _readable(self, conn: Connection, context: _Context, parsed: Notification) -> Handled:
        keys, detail = _keys_and_detail(context, parsed)
        found = _Found()
        for matcher in _MATCHERS[parsed.kind]:  # the first matcher that places it wins
            placed = await matcher(self, conn, context, parsed, keys, detail)
            if placed is not None:
                found = placed
                break
        return await self._placed(conn, context, parsed, keys, detail, found)

    async def _placed(self, conn: Connection, context: _Context, parsed: Notification, keys: dict[str, str],
                      detail: dict[str, Any], found: _Found) -> Handled:
        """Where the matchers placed it: recorded (if the matcher did not), then applied to its
        attempt, or escalated as an identity conflict or unmatched."""
        account_id = context.account.id
        reference, object_id = parsed.client_reference, parsed.provider_object_id
        esc_key = keys["identity-conflict" if found.conflict else "unmatched"]
        recorded = found.recorded
        if recorded is None:  # a refund's or a payout's notification, matched by its own aggregate
            recorded = await self._record(conn, context, None, {
                **detail, "escalation_key": None if found.attempt_id else esc_key,
                found.field: str(found.attempt_id) if found.attempt_id else None})
        if isinstance(recorded, repository.Duplicate):
            return Handled("duplicate")
        if found.apply is not None:
            await found.apply(conn, recorded.event_id)
            return Handled("applied", recorded.event_id, found.attempt_id)
        facts = {"provider_account": account_id, "client_reference": reference, "provider_payment_id": object_id,
                 "notification_event_id": recorded.event_id, "provider_event_id": parsed.event_id,
                 "notification_key": context.key, "type": parsed.event_type, "status": parsed.subject.status,
                 "amount_minor": parsed.subject.amount_minor, "currency": parsed.subject.currency}
        if found.conflict:
            # Attached to the reference-matched payment attempt for navigation; details name both.
            await self._raise(conn, esc_key, "identity-conflict", found.conflict_attempt, {
                **facts, "reference_attempt_id": found.conflict[0],
                "provider_payment_id_attempt_id": found.conflict[1]})
            return Handled("identity-conflict", recorded.event_id)
        # Never silently ignore what cannot be placed; the stored notification waits for
        # reconciliation (POST /v1/ops/notifications/{event_id}/apply).
        await self._raise(conn, esc_key, f"unmatched-{parsed.kind}", None, facts)
        return Handled("unmatched", recorded.event_id)

    async def _payment(self, conn: Connection, context: _Context, parsed: Notification, keys: dict[str, str],
                       detail: dict[str, Any]) -> _Found:
        """Both identifiers resolved independently and the notification recorded with what they
        found, in one statement; if they name different attempts the notification is
        contradictory evidence, applied to neither."""
        identified = await repository.read_identified(
            await repository.send_identify(conn, self._identify(context, parsed, keys, detail)), context.key)
        return self._payment_found(context, parsed, identified)

    def _identify(self, context: _Context, parsed: Notification, keys: dict[str, str],
                  detail: dict[str, Any]) -> dict[str, Any]:
        """``identify_and_record``'s parameters (gateway/notifications/repository.py)."""
        return {"provider_account": context.account.id, "client_reference": parsed.client_reference,
                "provider_payment_id": parsed.provider_object_id, "notification_key": context.key,
                "detail": {**detail, "payout_attempt_id": None}, "conflict_key": keys["identity-conflict"],
                "unmatched_key": keys["unmatched"],
                "evidence_payment_id": parsed.payment.id if parsed.payment else None, "now": self._clock.now()}

    def _payment_found(self, context: _Context, parsed: Notification, identified: repository.Identified) -> _Found:
        by_reference, by_payment_id = identified.by_reference, identified.by_payment_id
        if by_reference is not None and by_payment_id is not None and by_reference != by_payment_id:
            return _Found(conflict=(str(by_reference), str(by_payment_id)), conflict_attempt=by_reference,
                          recorded=identified.recorded)
        attempt_id = by_reference or by_payment_id
        if attempt_id is None:
            return _Found(recorded=identified.recorded)

        async def apply(conn: Connection, event_id: int) -> None:
            await self.apply(conn, context.account.id, attempt_id, parsed, event_id, context.key, actor=ACTOR,
                             locked=identified.locked)
        return _Found(attempt_id=attempt_id, apply=apply, recorded=identified.recorded, locked=identified.locked)

    async def _refund(self, conn: Connection, context: _Context, parsed: Notification, keys: dict[str, str],
                      detail: dict[str, Any]) -> _Found | None:
        """A ``payment.refunded`` (or a provider's refund event) naming a refund the gateway made:
        that refund attempt's evidence; None when it names none."""
        refund = await refund_notifications.match(conn, context.account.id, parsed)
        if refund is None:
            return None
        attempt, evidence = refund.found.attempt, refund.notification
        if attempt is None:
            return _Found(conflict=refund.found.conflict, field="refund_attempt_id")

        async def apply(conn: Connection, event_id: int) -> None:
            await refund_notifications.apply(conn, self._clock.now(), attempt, evidence,
                                             notification_event_id=event_id, notification_key=context.key,
                                             settings=self._settings)
        return _Found(attempt["attempt_id"], apply, field="refund_attempt_id")

    async def _payout(self, conn: Connection, context: _Context, parsed: Notification, keys: dict[str, str],
                      detail: dict[str, Any]) -> _Found:
        """``payout.*``: the payouts aggregate matches its own attempts, the same two ways."""
        payout = await payout_notifications.match(conn, context.account.id, parsed)
        attempt = payout.attempt
        if attempt is None:
            return _Found(conflict=payout.conflict)

        async def apply(conn: Connection, event_id: int) -> None:  # the one call site docs/decisions/0011 left
            await payout_notifications.apply(conn, self._clock.now(), attempt, parsed,
                                             notification_event_id=event_id, notification_key=context.key,
                                             settings=self._settings)
        return _Found(attempt["attempt_id"], apply)

    async def apply(self, conn: Connection, account_id: str, attempt_id: UUID, parsed: Notification, event_id: int,
                    key: str | None, *, actor: str, locked: dict[str, Any] | None = None) -> dict[str, Any]:
        """Apply a payment notification's evidence in the caller's transaction. A concurrent
        writer that changed the attempt makes it reapply against the new version, a bounded number
        of times, inside a savepoint: the notification record is never rolled back for it.
        ``locked``: the attempt as the recording statement locked it (docs/decisions/0049), used by
        the first application, which needs no savepoint: under that lock the version it read cannot
        move, so its conditional write cannot miss (if it did, it wrote nothing and the savepointed
        reapplication follows), and an error there fails the whole transaction, whose caller does it
        again or answers 503 (:meth:`handle`). A reapplication locks and reads the attempt again."""
        evidence = _evidence(account_id, parsed, event_id, key)
        if locked is not None:
            with contextlib.suppress(VersionConflict):
                return await self._attempts.apply_evidence(attempt_id, evidence, actor=actor, kind=None, conn=conn,
                                                           locked=locked)

        async def once() -> dict[str, Any]:
            async with savepoint(conn, "apply_evidence"):
                return await self._attempts.apply_evidence(attempt_id, evidence, actor=actor, kind=None, conn=conn)

        applied: dict[str, Any] = await retry_transaction(once)
        return applied

    async def _record(self, conn: Connection, context: _Context, attempt_id: UUID | None,
                      detail: dict[str, Any]) -> repository.Recorded | repository.Duplicate:
        return await repository.record(conn, provider_account=context.account.id, notification_key=context.key,
                                       attempt_id=attempt_id, detail=detail, now=self._clock.now())

    async def _raise(self, conn: Connection, key: str, reason: str, attempt_id: UUID | None,
                     details: dict[str, Any]) -> None:
        await raise_escalation(conn, escalation_key=key, reason=reason, now=self._clock.now(),
                               reminder_interval_s=self._settings.reminder_interval_s,
                               attempt_id=attempt_id, details=details)


def _batchable(context: _Context, parsed: Notification | Unreadable) -> set[tuple[str, str]] | None:
    """What names a delivery's attempt (its account's client reference and payment id), when it may
    go in a pipelined batch (NotificationHandler._pipelined); else None."""
    if not isinstance(parsed, Notification) or context.key is None or context.connected_unconfigured \
            or parsed.kind != "payment" or parsed.payment is None or refund_evidence(parsed) is not None \
            or (parsed.api_version is not None and parsed.api_version != context.account.api_version):
        return None
    account = context.account.id
    return {(account, f"reference:{parsed.client_reference}"), (account, f"payment:{parsed.provider_object_id}")}


def _keys_and_detail(context: _Context, parsed: Notification) -> tuple[dict[str, str], dict[str, Any]]:
    """A readable notification's two possible escalation keys and the detail it is recorded with."""
    keys = {problem: escalation_key(context.account.id, problem, notification_key=context.key,
                                    provider_object_id=parsed.provider_object_id,
                                    client_reference=parsed.client_reference)
            for problem in ("identity-conflict", "unmatched")}
    return keys, {**parsed.detail(), "webhook_id": context.webhook_id}


def _evidence(account_id: str, parsed: Notification, event_id: int, key: str | None) -> Evidence:
    """A payment notification's evidence, naming the notification it came from."""
    if parsed.payment is None:
        raise ValueError("only payment notifications apply to payment attempts")
    return dataclasses.replace(object_evidence(account_id, parsed.payment, notification_event_id=event_id,
                                               provider_event_id=parsed.event_id), evidence_key=key)


Matcher = Callable[[NotificationHandler, Connection, _Context, Notification, dict[str, str], dict[str, Any]],
                   Awaitable[_Found | None]]
# Each notification kind's matchers, tried in turn until one places it (each match carries its
# applier). A refunded payment naming a refund the gateway made is that refund's evidence before
# it is the payment's; a refund no attempt of the gateway's made is unmatched.
_MATCHERS: Mapping[str, tuple[Matcher, ...]] = {
    "payment": (NotificationHandler._refund, NotificationHandler._payment),
    "refund": (NotificationHandler._refund,),
    "payout": (NotificationHandler._payout,),
    "payout_recall": (NotificationHandler._payout,),
}
