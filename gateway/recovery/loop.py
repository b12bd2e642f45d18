"""The recovery loop (seed 004, "The Recovery Loop"): passes over claimed attempts.

Every pass either resolves the attempt, schedules and releases it (finish, or escalate and finish),
or takes one of the two deliberate exceptions the seed names: a send intent whose commit is
unknown (no finish: ownership cannot be confirmed) and a lost lease (the new owner schedules). The
loop never creates an attempt and never sends a first attempt; it resends only the stored request,
under its key, inside the escalation deadline, after a lookup found nothing and every resend
condition holds, and only after committing a send intent under the order and attempt locks.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
import structlog

from gateway.clock import Clock
from gateway.domain.attempts import Evidence
from gateway.domain.provider_evidence import Lookup, object_evidence
from gateway.domain.recovery import (
    MIN_DELAY_S,
    AttemptView,
    ResendConditions,
    Step,
    Timings,
    after_not_found,
    backoff_s,
    final_check,
    first_step,
)
from gateway.effects.gate import SendGate
from gateway.payments.attempts import Attempts, VersionConflict, stored_request
from gateway.payments.client import NotBuildable, PaymentClient
from gateway.payments.leases import Lease, Leases
from gateway.payments.sends import PaymentSends
from gateway.providers import checkout, provider_for
from gateway.ratelimits.buckets import Allowance, LookupTokens, NoToken
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Database

log = structlog.get_logger("gateway.recovery")

UNCONFIRMED = (psycopg.Error, TimeoutError, OSError)
# A pass that waits for its account's lookup tokens: lease released, nothing else changed
# (docs/decisions/0042).
DEFERRED = "deferred:lookup-rate"


def worker_name() -> str:
    return f"recovery-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def timings(account: ProviderAccount | None, settings: Settings) -> Timings:
    """The account's timings; for an account no longer configured, the most conservative ones."""
    if account is None:
        account = ProviderAccount(id="unknown:unknown:test", base_url="http://unconfigured.invalid",
                                  api_key="unused", webhook_endpoint_id="unused")
    return Timings(abandonment_threshold_s=account.abandonment_threshold_s, call_budget_s=account.call_budget_s,
                   record_budget_s=account.record_budget_s, processing_allowance_s=account.processing_allowance_s,
                   lookup_backoff_s=tuple(account.lookup_backoff_s), readonly_cadence_s=settings.readonly_cadence_s)


def reads(attempt: dict[str, Any]) -> int:
    """The provider reads a reconciling pass may make, each a lookup token: by provider payment ID
    if recorded, by client reference, and the payment-method check before a resend."""
    return 3 if attempt["provider_payment_id"] else 2


def view(attempt: dict[str, Any]) -> AttemptView:
    return AttemptView(state=attempt["state"], created_at=attempt["created_at"], first_sent_at=attempt["first_sent_at"],
                       escalation_deadline=attempt["escalation_deadline"], next_action=attempt["next_action"],
                       next_action_expires_at=attempt["next_action_expires_at"], passes=int(attempt["passes"]))


@dataclass
class SweepReport:
    claimed: int = 0
    outcomes: dict[str, int] | None = None

    def count(self, outcome: str) -> None:
        self.outcomes = self.outcomes or {}
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


class Recovery:
    def __init__(self, settings: Settings, clock: Clock, db: Database, attempts: Attempts, client: PaymentClient,
                 owner: str | None = None, concurrency: int | None = None) -> None:
        self._settings = settings
        self._concurrency = concurrency or settings.recovery_concurrency
        self._clock = clock
        self._db = db
        self._attempts = attempts
        self._client = client
        self._leases = Leases(db, clock, settings)
        self._tokens = LookupTokens(db, clock, settings)
        self._sends = PaymentSends(SendGate(db, clock, settings.reminder_interval_s), client)  # seed 001
        self.owner = owner or worker_name()

    async def sweep(self, limit: int = 100) -> SweepReport:
        """One sweep: at most ``limit`` passes over due attempts, in due order. Attempts are claimed
        ``concurrency`` at a time in one statement that skips those other workers are claiming
        (docs/decisions/0033), and the passes of one claim run together; a claim is made only
        when the previous passes have finished, so no lease waits for a pass that has not begun.
        Lookups run at the rate the account's limits allow (docs/decisions/0042): a claim's passes
        reserve their lookup tokens together, one statement per account for what the sweep does
        not hold already; those left without one are deferred, and the sweep claims nothing more of
        that account. What the sweep's passes did not spend goes back once, at its end
        (docs/decisions/0050)."""
        report = SweepReport()
        passed: list[uuid.UUID] = []  # one pass per attempt per sweep, as a listing of the due ones gave
        spent: set[str] = set()  # accounts whose tokens this sweep found spent
        allowance = Allowance(self._tokens)
        while report.claimed < limit:
            claimed = await self._leases.claim_due(min(self._concurrency, limit - report.claimed), self.owner,
                                                   passed, spent=spent)
            if not claimed:
                break
            report.claimed += len(claimed)
            passed.extend(attempt["attempt_id"] for attempt in claimed)
            ready = await self._admit(claimed, allowance, spent)
            for outcome in await asyncio.gather(*(self._claimed_pass(attempt, allowance) for attempt in ready)):
                report.count(outcome)
            for _ in range(len(claimed) - len(ready)):
                report.count(DEFERRED)
        await allowance.give_back()
        return report

    async def _admit(self, claimed: list[dict[str, Any]], allowance: Allowance,
                     spent: set[str]) -> list[dict[str, Any]]:
        """The claimed attempts whose passes may run now: those that look nothing up, and, per
        account in due order, those that look up for which the sweep holds every read they may
        make (one take per account for the claim's shortfall; what they do not spend is held for
        the sweep's next claim). From
        the first that does not fit on, the account's attempts are deferred (their leases released,
        nothing else changed) and the account is ``spent`` for the rest of the sweep."""
        now = self._clock.now()
        looking: dict[str, tuple[ProviderAccount, list[dict[str, Any]]]] = {}
        for attempt in claimed:
            account = self._settings.account(attempt["provider_account"])
            if account is not None and first_step(view(attempt), timings(account, self._settings),
                                                  now).kind == "reconcile":
                looking.setdefault(account.id, (account, []))[1].append(attempt)
        deferred: list[dict[str, Any]] = []
        for account, attempts in looking.values():
            granted = await allowance.reserve(account, sum(map(reads, attempts)))
            fitting = 0
            while fitting < len(attempts) and reads(attempts[fitting]) <= granted:
                granted -= reads(attempts[fitting])
                fitting += 1
            if fitting < len(attempts):
                spent.add(account.id)
                deferred.extend(attempts[fitting:])
                log.info("recovery_lookups_deferred", provider_account=account.id, deferred=len(attempts) - fitting)
        await self._leases.defer(deferred, self.owner)
        waiting = {attempt["attempt_id"] for attempt in deferred}
        return [attempt for attempt in claimed if attempt["attempt_id"] not in waiting]

    async def run_pass(self, attempt_id: uuid.UUID) -> str:
        """One pass over one attempt; returns what it did (for logs, metrics and tests)."""
        attempt = await self._leases.claim(attempt_id, self.owner)
        if attempt is None:
            return "not-claimed"
        allowance = Allowance(self._tokens)
        outcome = await self._claimed_pass(attempt, allowance)
        await allowance.give_back()
        return outcome

    async def _claimed_pass(self, attempt: dict[str, Any], allowance: Allowance) -> str:
        attempt_id = attempt["attempt_id"]
        account = self._settings.account(attempt["provider_account"])
        times = timings(account, self._settings)
        lease = Lease(owner=self.owner, token=attempt["lease_token"], expires_at=attempt["lease_expires_at"],
                      next_delay_s=backoff_s(times, int(attempt["passes"])), escalated_delay_s=times.readonly_cadence_s)
        with structlog.contextvars.bound_contextvars(attempt_id=str(attempt_id), order_id=attempt["order_id"],
                                                     recovery_owner=self.owner):
            try:
                outcome = await self._pass(attempt, account, times, lease, allowance)
            except NoToken:  # the account's tokens ran out before one of this pass's reads
                await self._leases.defer([attempt], self.owner)
                outcome = DEFERRED
            log.info("recovery_pass", outcome=outcome, state=attempt["state"], passes=attempt["passes"])
            return outcome

    async def _pass(self, attempt: dict[str, Any], account: ProviderAccount | None, times: Timings,
                    lease: Lease, allowance: Allowance) -> str:
        step = first_step(view(attempt), times, self._clock.now())
        if step.kind == "close-never-sent":
            return await self._close_never_sent(attempt, times, lease)
        if step.kind != "reconcile":
            return await self._perform(attempt, lease, step)
        if account is None:
            # Nothing can be looked up or resent without the account's credentials.
            return await self._perform(attempt, lease, Step("escalate-and-finish", times.readonly_cadence_s,
                                                            "resend-not-safe:account-not-configured"))
        return await self._reconcile(attempt, account, times, lease, allowance)

    async def _perform(self, attempt: dict[str, Any], lease: Lease, step: Step,
                       event: tuple[str, dict[str, Any]] | None = None) -> str:
        if step.kind == "escalate-and-finish" and step.reason:
            done = await self._leases.escalate_and_finish(attempt, lease, step.reason, step.delay_s, event)
            return f"escalated:{step.reason}" if done else "lease-lost"
        done = await self._leases.finish(attempt["attempt_id"], lease, step.delay_s, event)
        return "scheduled" if done else "lease-lost"

    async def _close_never_sent(self, attempt: dict[str, Any], times: Timings, lease: Lease) -> str:
        if await self._leases.close_never_sent(attempt, lease) is not None:
            return "closed-never-sent"
        # The endpoint moved it to Started first: reschedule for its new state, never close it.
        current = await self._attempts.get(attempt["attempt_id"])
        if current["state"] not in ("Started", "Unknown") or current["lease_token"] != lease.token:
            return "lease-lost"
        step = first_step(view({**current, "passes": attempt["passes"]}), times, self._clock.now())
        delay = step.delay_s if step.kind == "finish" else lease.next_delay_s
        return await self._perform(current, lease, Step("finish", delay))

    def _left(self, deadline: datetime) -> float:
        """What remains of the pass's lookup budget (never zero: the call then times out at once)."""
        return max((deadline - self._clock.now()).total_seconds(), MIN_DELAY_S)

    async def _look_up(self, attempt: dict[str, Any], account: ProviderAccount, deadline: datetime,
                       allowance: Allowance) -> Lookup:
        """By provider payment ID if recorded; if that misses or finds another reference, by
        account and client reference too, before concluding anything. Both calls share the
        pass's one lookup budget, so a pass stays inside the lease (settings: worst_case_pass_s),
        and each spends a lookup token."""
        if attempt["provider_payment_id"]:
            await allowance.spend(account)
            by_id = await self._client.find_payment(account.id, provider_id=attempt["provider_payment_id"],
                                                    budget_s=self._left(deadline))
            if by_id.outcome != "not-found" and not (
                    by_id.payment and by_id.payment.client_reference not in (None, attempt["client_reference"])):
                return by_id
        await allowance.spend(account)
        return await self._client.find_payment(account.id, client_reference=attempt["client_reference"],
                                               since=attempt["created_at"],
                                               budget_s=self._left(deadline))

    async def _reconcile(self, attempt: dict[str, Any], account: ProviderAccount, times: Timings,
                         lease: Lease, allowance: Allowance) -> str:
        ambiguous = attempt["last_send_event"] == "send_intent"
        lookup_deadline = self._clock.now() + timedelta(seconds=account.call_budget_s)
        found = await self._look_up(attempt, account, lookup_deadline, allowance)
        observation = {"outcome": found.outcome, "reason": found.reason, "ambiguous_send_boundary": ambiguous,
                       **({"request_id": found.request_id} if found.request_id else {})}
        if found.outcome == "rate-limited":
            await self._tokens.pause(account.id, found.retry_after_s or lease.next_delay_s, "provider.rate-limited")
            allowance.revoke(account.id)
        if found.outcome in ("failed", "rate-limited"):
            # Not "not found": the attempt stays as it is and is looked up again on the backoff.
            return await self._perform(attempt, lease, Step("finish", lease.next_delay_s), ("lookup", observation))
        if found.outcome == "ambiguous":
            return await self._perform(attempt, lease, Step("escalate-and-finish", times.readonly_cadence_s,
                                                            "lookup-ambiguous"), ("lookup", observation))
        if found.payment is not None:
            evidence = object_evidence(account.id, found.payment, lookup="recovery",
                                       **({"request_id": found.request_id} if found.request_id else {}))
            return await self._apply(attempt, evidence, lease, times, kind="lookup")
        conditions = await self._conditions(attempt, account, lookup_deadline, allowance)
        step = after_not_found(view(attempt), conditions, times, self._clock.now())
        if step.kind != "reconcile":
            observation["payment_method_usable"] = conditions.payment_method_usable
            return await self._perform(attempt, lease, step, ("lookup", observation))
        return await self._resend(attempt, account, times, lease, observation)

    async def _conditions(self, attempt: dict[str, Any], account: ProviderAccount, lookup_deadline: datetime,
                          allowance: Allowance) -> ResendConditions:
        try:
            self._client.build(stored_request(attempt))
            buildable = True
        except NotBuildable:
            buildable = False
        drift = await self._sends.drifted(stored_request(attempt), attempt["attempt_id"])
        return ResendConditions(order_payable=await self._leases.order_state(attempt["order_id"]) == "Open",
                                request_buildable=buildable,
                                payment_method_usable=await self._payment_method_usable(
                                    attempt, account, lookup_deadline, allowance),
                                request_unchanged=drift is None)

    async def _payment_method_usable(self, attempt: dict[str, Any], account: ProviderAccount,
                                     lookup_deadline: datetime, allowance: Allowance) -> bool | None:
        """Whether the stored request's payment method is still usable, asked of the provider within
        the pass's lookup budget (seed 004 resend conditions; docs/decisions/0027). A stored body
        naming no payment method cannot be resent."""
        method = checkout(provider_for(account.id)).payment_method(attempt["request_body"])
        if method is None:
            return False
        await allowance.spend(account)
        return await self._client.payment_method_usable(account.id, method, budget_s=self._left(lookup_deadline))

    async def _resend(self, attempt: dict[str, Any], account: ProviderAccount, times: Timings, lease: Lease,
                      observation: dict[str, Any]) -> str:
        try:
            committed = await self._leases.commit_intent(attempt, lease, ("lookup", observation))
        except UNCONFIRMED as error:
            # Possibly committed: send nothing and do not finish; the next claimed pass reads the
            # history, finds the intent present or absent, and decides afresh.
            log.warning("send_intent_unconfirmed", error_type=type(error).__name__)
            return "intent-unconfirmed"
        if not committed:
            return await self._perform(attempt, lease, Step("finish", lease.next_delay_s))
        why = final_check(lease.expires_at, attempt["escalation_deadline"], self._clock.now())
        if why is not None:
            await self._leases.abandon_send(attempt["attempt_id"], lease, why)
            if why == "deadline":
                return await self._perform(attempt, lease, Step("escalate-and-finish", times.readonly_cadence_s,
                                                                "deadline"))
            return "send-abandoned"
        evidence = await self._sends.create_payment(stored_request(attempt), attempt["attempt_id"], actor=self.owner,
                                                    budget_s=account.call_budget_s)
        return await self._apply(attempt, evidence, lease, times, kind="send_result", prefix="resent")

    async def _apply(self, attempt: dict[str, Any], evidence: Evidence, lease: Lease, times: Timings, kind: str,
                     prefix: str = "found") -> str:
        delay = lease.next_delay_s
        if evidence.next_action_expires_at is not None:
            delay = max(min(delay, (evidence.next_action_expires_at - self._clock.now()).total_seconds()), 0.001)
        lease = Lease(lease.owner, lease.token, lease.expires_at, delay, lease.escalated_delay_s)
        try:
            async with self._clock.budget(times.record_budget_s):
                updated = await self._attempts.apply_evidence(attempt["attempt_id"], evidence, actor=self.owner,
                                                              kind=kind, lease=lease)
        except (*UNCONFIRMED, VersionConflict) as error:
            log.warning("recovery_outcome_not_recorded", finding=evidence.finding, error_type=type(error).__name__)
            return "outcome-unconfirmed"
        return f"{prefix}:{evidence.finding}->{updated['state']}"
