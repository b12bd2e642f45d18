"""The read-only reconciler of every attempt kind (seed 000, "Reconcile Before Any New Attempt";
section 17: "A recall that fails or becomes Unknown is reconciled the same way").

For each due attempt (Unknown, or accepted and awaiting a status check), oldest first, on the
lookup backoff: look the *attempt* up with the account stored on it (never a default: an account no
longer configured is escalated ``account-not-configured`` and the attempt
left as it is), verify the record (one record, the kind's identity check, reference, amount and
currency), then, under the attempt's row lock in the transaction that writes it (the state is re-read
there, so evidence that arrived during the lookup wins):
completed -> Succeeded; rejected -> Failed; still processing -> leave; a mismatching or ambiguous
record, or one whose provider id is not the id the attempt recorded or is another attempt's (seed
004: the recorded id is never replaced) -> escalate ``mismatch``, the attempt as it was; not found
-> leave unless the attempt is Unknown and all three of the seed's conditions hold
(``not_applied_allowed``), then NotApplied. It never resends.

Every round first escalates ``deadline`` each unresolved attempt past its stamped escalation
deadline that was never escalated for it, without a lookup (seed 000: every
attempt has an escalation deadline): an account paused or out of lookup tokens delays no
escalation, the attempt row is not changed, and an attempt is escalated for its deadline once.

Lookups run at the rate the account's limits allow (seed 004; docs/decisions/0042): each round
shares its batch among the accounts with due checks that are not paused (``lookup_shares``;
docs/decisions/0058: one account's backlog or 429 never takes another's turn, seed 004: "other
providers and accounts continue"), takes, per account, the lookup tokens for its share in one
statement, and claims only as many checks as it was granted; the rest stay due for a later round.
A 429 pauses the account and empties its bucket (docs/decisions/0008), and the round's remaining
checks of that account are made due again, uncounted.
"""

from __future__ import annotations

from datetime import datetime

import httpx

from gateway import instruments
from gateway.clock import Clock
from gateway.domain.attempt_timing import AttemptTimings, not_applied_allowed
from gateway.domain.evidence_rule import Escalate, Seen, Write, classified, verdict
from gateway.domain.lookup_shares import shares
from gateway.domain.outcomes import (
    IN_FLIGHT,
    MISMATCH,
    SETTLED,
    AttemptState,
    Classification,
    ProviderIdClaimed,
    classify_record,
)
from gateway.effects.certify import Certifier
from gateway.effects.ledger import escalation_key
from gateway.pipeline import transitions
from gateway.pipeline.accounts import NOT_CONFIGURED, operation, stored_account
from gateway.pipeline.kind import AttemptKind, Row
from gateway.providers import Operation, provider_for
from gateway.providers.calls import ProviderCalls, RateLimited
from gateway.ratelimits.buckets import LookupTokens
from gateway.settings import Settings
from gateway.store.db import Connection, Database

BATCH = 50
ALREADY_RESOLVED = "already_resolved"
RATE_LIMITED = "rate_limited"  # a failed lookup answered 429: the account pauses
# The outcomes that resolve the attempt ("reconciliation outcomes").
RESOLVED = {AttemptState.SUCCEEDED: "succeeded", AttemptState.FAILED: "failed",
            AttemptState.NOT_APPLIED: "not_applied"}
METHOD = "lookup:client_reference"


class Reconciler:
    def __init__(self, kind: AttemptKind, db: Database, clock: Clock, settings: Settings,
                 http: httpx.AsyncClient) -> None:
        self.kind = kind
        self.db = db
        self.clock = clock
        self.settings = settings
        self.http = http
        self.actor = f"{kind.slug}-reconciler"
        self.tokens = LookupTokens(db, clock, settings)

    async def run_once(self) -> int:
        """One round: the deadlines that passed escalated, then at most ``BATCH`` due checks shared
        among the accounts not paused, per account as many as its lookup tokens allow; how many
        attempts were looked up (or escalated ``account-not-configured`` without a lookup)."""
        await self._escalate_overdue()
        backoff = self.kind.timings(self.settings, None).lookup_backoff_s
        reconciled = 0
        due_accounts = await self.kind.rows.due_accounts(self.db, self.clock.now(), BATCH)
        for (provider_account, _), share in zip(due_accounts, shares([due for _, due in due_accounts], BATCH),
                                                strict=True):
            account = self.settings.account(provider_account)
            # An account no longer configured is escalated without a lookup: no tokens to take.
            granted = share if account is None else await self.tokens.take(account, share)
            if not granted:
                continue
            batch = await self.kind.rows.due_checks(self.db, self.clock.now(), backoff, granted, provider_account)
            if account is not None:  # checks another reconciler claimed first leave their tokens
                await self.tokens.give_back(account, granted - len(batch))
            for index, attempt in enumerate(batch):
                reconciled += 1
                if await self.reconcile(attempt):
                    await self.kind.rows.defer_checks(self.db, self.clock.now(), batch[index + 1:])
                    break
        return reconciled

    async def _escalate_overdue(self) -> None:
        """Escalate ``deadline``, in one transaction, at most ``BATCH`` attempts past their stamped
        escalation deadline and never escalated for it, each as locked there; no lookup, and the
        attempt row is left as it is (docs/decisions/0058)."""
        now = self.clock.now()
        async with self.db.transaction() as conn:
            for attempt in await self.kind.rows.overdue_unescalated(
                    conn, now, escalation_key(self.kind.name, "%s", "deadline"), BATCH):
                await self._escalate(conn, now, attempt, "deadline")

    async def reconcile(self, attempt: Row) -> bool:
        """Look one claimed check up and write what it established, counted by its outcome once
        its transaction committed; True when the lookup was answered 429 (the account is then paused)."""
        outcome = await self._reconcile(attempt)
        instruments.count(instruments.RECONCILIATIONS, kind=self.kind.name, outcome=outcome)
        return outcome == RATE_LIMITED

    async def _reconcile(self, attempt: Row) -> str:
        account = stored_account(self.settings, attempt)
        if account is None:  # never ask another account, never conclude anything from silence
            async with self.db.transaction() as conn:
                current = await self.kind.rows.lock(conn, attempt["attempt_id"])
                if current is not None and AttemptState(current["state"]) in IN_FLIGHT:
                    await self._escalate(conn, self.clock.now(), current, NOT_CONFIGURED,
                                         provider_account=current["provider_account"])
            return "account_not_configured"
        calls = ProviderCalls(account, self.clock, self.http, self.settings.token_pepper.get_secret_value(),
                              kind=self.kind.name)
        timings = self.kind.timings(self.settings, account)
        lookup_started_at = self.clock.now()  # condition (3): when *this* lookup began
        contract = operation(self.kind, account.id)
        rate_limited = False
        try:
            found = await contract.lookup(calls, attempt)
        except RateLimited as limited:  # a failed lookup, never "not found"; the account pauses
            found, rate_limited = None, True
            await self.tokens.pause(account.id, limited.retry_after_s or timings.lookup_backoff_s[0],
                                    "provider.rate-limited")
        now = self.clock.now()
        async with self.db.transaction() as conn:
            current = await self.kind.rows.lock(conn, attempt["attempt_id"])
            if current is None:
                return RATE_LIMITED if rate_limited else ALREADY_RESOLVED
            await self.kind.history(conn, current[self.kind.parent], "reconciliation", actor=self.actor, now=now,
                                    attempt_id=current["attempt_id"],
                                    detail={"method": METHOD, "records": None if found is None else len(found),
                                            "lookup_started_at": lookup_started_at.isoformat()})
            if AttemptState(current["state"]) not in IN_FLIGHT:
                # Resolved while we looked (a notification, the executor): its evidence stands.
                return RATE_LIMITED if rate_limited else ALREADY_RESOLVED
            outcome = await self._apply(conn, now, current, found, lookup_started_at, timings, contract,
                                        calls.provider.timings.request_expiry_enforced)
        return RATE_LIMITED if rate_limited else outcome

    async def _apply(self, conn: Connection, now: datetime, current: Row, found: list[Row] | None,
                     lookup_started_at: datetime, timings: AttemptTimings, contract: Operation,
                     expiry_enforced: bool) -> str:
        """Write what the lookup established about the attempt as locked; the outcome (one of
        ``RESOLVED`` when it resolved it)."""
        if found is None:  # the lookup failed: nothing learned
            return "lookup_failed"
        if not found:
            # "Not found" closes nothing unless the provider enforces the request's expiry
            # (seed 000 review, "Reconciliation and retry" 3; docs/decisions/0047).
            cutoff = timings.not_applied_cutoff(current["send_deadline"])
            if (not expiry_enforced or current["state"] != AttemptState.UNKNOWN.value
                    or not not_applied_allowed(lookup_started_at, cutoff)):
                return "not_found"
            return await self._resolve(conn, now, current, AttemptState.NOT_APPLIED, "reconciled.not-found", None)
        seen = self.verify(current, found, contract)
        ruled = verdict(AttemptState(current["state"]), current[self.kind.rows.provider_id], classified(seen))
        if isinstance(ruled, Escalate):  # not the attempt's record, or another provider id than the recorded one
            return await self._mismatch(conn, now, current, seen.provider_id)
        if not isinstance(ruled, Write) or ruled.state not in SETTLED:
            return "processing"  # still processing, or a status no row documents: look again later
        try:
            return await self._resolve(conn, now, current, ruled.state, seen.reason, seen)
        except ProviderIdClaimed as claimed:  # the record's id is another attempt's: keep both as they are
            return await self._mismatch(conn, now, current, claimed.provider_id)

    async def _mismatch(self, conn: Connection, now: datetime, current: Row, found_id: str | None) -> str:
        await transitions.escalate_mismatch(self.kind, conn, now, current, found_id,
                                            reminder_interval_s=self.settings.reminder_interval_s)
        return "mismatch"

    def seen(self, attempt: Row, record: Row) -> Seen:
        """What one provider record establishes about the attempt, read as a lookup's record is
        (:meth:`verify`): for a provider-side reconciliation run that listed it."""
        return classified(self.verify(attempt, [record], operation(self.kind, attempt["provider_account"])))

    async def apply_listed(self, conn: Connection, now: datetime, current: Row, record: Row) -> str:
        """Write what a listed provider record establishes about the attempt as locked in ``conn``,
        exactly as a lookup that found it (:meth:`_apply`): a provider-side reconciliation run's
        evidence goes through the reconciler's own rule, never a second one."""
        account = stored_account(self.settings, current)
        if account is None or AttemptState(current["state"]) not in IN_FLIGHT:
            return ALREADY_RESOLVED
        contract = operation(self.kind, account.id)
        return await self._apply(conn, now, current, [record], now, self.kind.timings(self.settings, account),
                                 contract, provider_for(account.id).timings.request_expiry_enforced)

    def verify(self, attempt: Row, found: list[Row], contract: Operation) -> Classification:
        """One record, the kind's identity (a payout's destination, a recall's payout), then the
        attempt's reference, amount and currency (the provider id the attempt recorded is the
        evidence rule's to check)."""
        if len(found) != 1 or not self.kind.identity(attempt, found[0]):
            record_id = found[0].get("id") if len(found) == 1 else None
            return Classification(MISMATCH, contract.table.version,
                                  provider_id=record_id if isinstance(record_id, str) else None)
        return classify_record(found[0], self.kind.expected(attempt), contract.table)

    async def _resolve(self, conn: Connection, now: datetime, current: Row, state: AttemptState, reason: str,
                       seen: Classification | None) -> str:
        written = await transitions.resolve(
            self.kind, conn, now, current, state, reason, actor=self.actor,
            from_states=[AttemptState(current["state"])],  # exactly the state decided from, under the lock
            provider_id=seen.provider_id if seen else None,
            provider_status=seen.provider_status if seen else None,
            certifier=Certifier.of(self.settings))  # seed 001
        return RESOLVED[state] if written is not None else ALREADY_RESOLVED

    async def _escalate(self, conn: Connection, now: datetime, current: Row, cause: str, **facts: object) -> None:
        """Payments operations own what reconciliation cannot resolve (seed 000, section 2)."""
        await transitions.escalate(self.kind, conn, now, current, cause,
                                   reminder_interval_s=self.settings.reminder_interval_s, **facts)
