"""The executor of every attempt kind: admit, claim, Started, send, classify, record (seed 000,
sections 8-11; docs/decisions/0015 choice 6 for recalls).

The only component that calls the provider's create endpoint of a kind, and only after a confirmed
claim and a confirmed Started write. An unconfirmed claim or Started write sends nothing: the
sweeper reads the durable state later. A resend inside the attempt happens only after a rejection
the classification table documents as no-effect and transient, with the same key and bytes, at
most ``MAX_SENDS`` times, and only while ``count_send`` confirms the lease and the send deadline.
A timeout is Unknown; nothing here ever resends after one. Every send passes the seed 001 send
gate first, on the provider account stored on the attempt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import structlog

from gateway.clock import Clock
from gateway.domain.attempt_timing import resend_fits, resend_wait_s
from gateway.domain.evidence_rule import Escalate, Seen, Write, answered, verdict
from gateway.domain.outcomes import (
    IN_FLIGHT,
    AttemptState,
    Classification,
    ProviderIdClaimed,
    ProviderResponse,
    classify,
)
from gateway.effects.certify import Certifier
from gateway.effects.gate import SendGate
from gateway.pipeline import signals, transitions
from gateway.pipeline.accounts import operation, stored_account
from gateway.pipeline.effects import open_send
from gateway.pipeline.kind import AttemptKind, Claimed, Job, Postponed, Presenter, Refused, Row
from gateway.providers.base import Request
from gateway.providers.calls import CredentialUnavailable, ProviderCalls
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Database

MAX_SENDS = 3
log = structlog.get_logger("gateway.pipeline")


async def send_bounded(clock: Clock, send_deadline: datetime, count_send: Callable[[int], Awaitable[bool]],
                       send_once: Callable[[], Awaitable[Classification | str]],
                       observe: Callable[[Classification, int], Awaitable[None]]) -> Classification | str:
    """The send loop: before each send ``count_send`` re-checks the lease and the send deadline
    ("send.refused" when it does not confirm); ``send_once`` sends and classifies (or returns its
    own stopping code); each answer is observed; only a row the table marks ``resend`` (documented
    no-effect and transient) is sent again, at most ``MAX_SENDS`` times, after its Retry-After or,
    without one, 1 s doubling per such answer (``resend_wait_s``), and only when that wait ends
    before the send deadline. Returns the last classification, or the stopping code."""
    for send in range(1, MAX_SENDS + 1):
        if not await count_send(send):
            return "send.refused"
        classification = await send_once()
        if isinstance(classification, str):
            return classification
        await observe(classification, send)
        if not classification.row.resend or send == MAX_SENDS:
            break
        wait_s = resend_wait_s(classification.retry_after_s, send)
        if not resend_fits(clock.now(), wait_s, send_deadline):
            break
        await clock.sleep(wait_s)
    return classification


@dataclass(frozen=True)
class Executor:
    kind: AttemptKind
    db: Database
    clock: Clock
    settings: Settings
    presenter: Presenter
    http: httpx.AsyncClient

    async def run(self, job: Job) -> Postponed | str:
        """Handle one delivery; the stopping or resulting code, or Postponed (redeliver later)."""
        ids = job.ids()
        admitted = await self.kind.admit(self.db, self.clock.now(), job, self.presenter)
        if isinstance(admitted, Postponed):
            log.info(f"{self.kind.name}_delivery_postponed", code=admitted.code, **ids)
            signals.postponed(self.kind, admitted)
            return admitted
        if isinstance(admitted, Refused):
            signals.refused(self.kind, admitted)
            await self._record_delivery(job, admitted.code, admitted.grant, admitted.detail)
            return admitted.code
        try:
            claimed = await self.kind.claim(self.db, self.clock.now(), self.settings, admitted,
                                            self.presenter.service_id)
        except Exception as error:  # noqa: BLE001 - the commit may have happened: never send, let recovery read
            log.warning(f"{self.kind.name}_claim_unconfirmed", error_type=type(error).__name__, **ids)
            signals.unconfirmed(self.kind, "claim")
            return "claim.unconfirmed"
        if isinstance(claimed, Refused):
            signals.refused(self.kind, claimed)
            await self._record_delivery(job, claimed.code, claimed.grant)
            return claimed.code
        return await self._start_and_send(claimed, ids | {"attempt_id": str(claimed.attempt["attempt_id"])})

    async def _record_delivery(self, job: Job, code: str, grant: Row | None,
                               detail: dict[str, Any] | None = None) -> None:
        """Evidence of a refused or lost delivery. A refusal without a known grant is only logged:
        a message naming no grant belongs to nothing we can attach evidence to."""
        log.warning(f"{self.kind.name}_delivery_refused", code=code, presenter=self.presenter.service_id,
                    **job.ids())
        if grant is None:
            return
        async with self.db.transaction() as conn:
            await self.kind.history(conn, grant[self.kind.parent], "delivery", actor=self.presenter.service_id,
                                    now=self.clock.now(), grant_id=grant["grant_id"], correlation_id=job.correlation_id,
                                    detail={"code": code, **(detail or {})})

    async def _start_and_send(self, claimed: Claimed, ids: dict[str, str]) -> str:
        attempt, epoch = claimed.attempt, claimed.attempt["lease_epoch"]
        account = stored_account(self.settings, attempt)
        if account is None:  # a claim stores a configured account (or refuses): a broken invariant
            raise RuntimeError(f"{self.kind.label} attempt {attempt['attempt_id']} claimed on an unconfigured account")
        calls = ProviderCalls(account, self.clock, self.http, self.settings.token_pepper.get_secret_value(),
                              kind=self.kind.name)
        try:
            key = calls.credential()
        except CredentialUnavailable:
            await self._resolve(attempt, epoch, AttemptState.NOT_STARTED, "credential.unavailable",
                                AttemptState.CLAIMED)
            return "credential.unavailable"
        if not await transitions.mark_started(self.kind, self.db, self.clock.now(), attempt, epoch):
            log.warning(f"{self.kind.name}_not_sent", code="start.unconfirmed", **ids)
            signals.unconfirmed(self.kind, "start")
            return "start.unconfirmed"
        return await self._send(calls, account, attempt, epoch, claimed.secret, key, ids)

    async def _send(self, calls: ProviderCalls, account: ProviderAccount, attempt: Row, epoch: int,
                    secret: str | None, key: str, ids: dict[str, str]) -> str:
        async def counted(send: int) -> bool:
            if await transitions.count_send(self.kind, self.db, self.clock.now(), attempt, epoch):
                return True
            log.warning(f"{self.kind.name}_send_refused", send=send, **ids)
            return False

        first: list[Request] = []  # the first send's request: every resend carries exactly its bytes
        sent: list[str | None] = [None]  # the provider's id of the latest send's request, for its observation

        async def send_once() -> Classification | str:
            # Seed 001: every send re-derives the effect digest from the request it carries.
            request = await open_send(self.kind, SendGate(self.db, self.clock, self.settings.reminder_interval_s),
                                      attempt, account, secret, pepper=calls.pepper, actor=self.presenter.service_id,
                                      first=first[0] if first else None)
            if isinstance(request, str):
                await self._resolve(attempt, epoch, AttemptState.UNKNOWN, f"request.not-buildable.{request}",
                                    AttemptState.STARTED)
                return f"request.not-buildable.{request}"
            first[:] = [request]
            observation = await calls.create(request.path, request.body, attempt["idempotency_key"], key)
            sent[:] = [observation.request_id if isinstance(observation, ProviderResponse) else None]
            return classify(observation, self.kind.expected(attempt), operation(self.kind, account.id).table)

        classification = await send_bounded(self.clock, attempt["send_deadline"], counted, send_once,
                                            lambda seen, send: self._observe(attempt, seen, send, sent[0]))
        if isinstance(classification, str):
            return classification
        if classification.row.resend:  # sends exhausted, or no resend fits before the send deadline: Started
            # with a recorded send failure, its sender's until the lease lapses (seed 000 §11)
            signals.executed(self.kind, AttemptState.STARTED.value)
            return classification.reason
        return await self._apply(attempt, epoch, classification)

    async def _observe(self, attempt: Row, classification: Classification, send: int,
                       request_id: str | None = None) -> None:
        async with self.db.transaction() as conn:
            await self.kind.history(conn, attempt[self.kind.parent], "provider_observation",
                                    actor=self.presenter.service_id, now=self.clock.now(),
                                    attempt_id=attempt["attempt_id"],
                                    detail={"send": send, "reason": classification.reason,
                                            "classification_table": classification.table,
                                            "attempt_state": classification.state.value,
                                            self.kind.rows.provider_id: classification.provider_id,
                                            "provider_status": classification.provider_status,
                                            **({"request_id": request_id} if request_id else {})})

    async def _apply(self, attempt: Row, epoch: int, answer: Classification) -> str:
        """The send's answer is one more piece of evidence (seed 000 §13; seed 004, "Persisting the
        Attempt"): under the attempt's row lock, the one evidence rule decides from the attempt as
        it stands, read as its sender's answer while the lease epoch is still this executor's
        (``evidence_rule.answered``), and it is written through the one narrow evidence write; an
        answer naming another provider id than the recorded one, or one another attempt holds, is
        escalated as a mismatch, a contradiction of a settled outcome as a contradiction. The
        state the attempt is left in, or the answer's when nothing could be recorded."""
        now = self.clock.now()
        try:
            async with self.db.transaction() as conn:
                current = await self.kind.rows.lock(conn, attempt["attempt_id"])
                if current is None:  # attempts are never deleted: only a broken invariant gets here
                    raise RuntimeError(f"{self.kind.label} attempt {attempt['attempt_id']} vanished")
                owner = current["lease_epoch"] == epoch
                seen = answered(answer, owner=owner)
                ruled = verdict(AttemptState(current["state"]), current[self.kind.rows.provider_id], seen)
                found = seen.provider_id
                if isinstance(ruled, Write):
                    try:
                        await self._write(conn, now, current, ruled, answer, seen, epoch if owner else None)
                    except ProviderIdClaimed as claimed:  # another attempt's object: both stay as they are
                        ruled, found = Escalate("mismatch"), claimed.provider_id
                    else:
                        signals.executed(self.kind, ruled.state.value)
                        return ruled.state.value
                if isinstance(ruled, Escalate):
                    await self._escalate(conn, now, current, ruled, found, answer)
                return str(current["state"])
        except Exception as error:  # noqa: BLE001 - the lease lapses and the sweeper records Unknown
            log.warning(f"{self.kind.name}_record_failed", attempt_id=str(attempt["attempt_id"]),
                        error_type=type(error).__name__)
            signals.unconfirmed(self.kind, "record")
            return answer.state.value

    async def _write(self, conn: Connection, now: datetime, current: Row, ruled: Write, answer: Classification,
                     seen: Seen, epoch: int | None) -> None:
        next_check_at = None
        if ruled.state in IN_FLIGHT:  # the reconciler's first look
            next_check_at = self.kind.timings(self.settings, stored_account(self.settings, current)).next_check(now, 0)
        written = await transitions.resolve(
            self.kind, conn, now, current, ruled.state, answer.reason, actor=self.presenter.service_id,
            from_states=ruled.from_states, epoch=epoch,
            provider_id=seen.provider_id if seen.matches else None,  # a record not the attempt's lends no id
            provider_status=answer.provider_status if seen.matches else None, next_check_at=next_check_at,
            certifier=Certifier.of(self.settings))  # seed 001
        if written is None:  # the row is locked and the rule decided from it: only a broken invariant
            raise RuntimeError(f"{self.kind.label} attempt {current['attempt_id']} moved under its own lock")

    async def _escalate(self, conn: Connection, now: datetime, current: Row, ruled: Escalate, found: str | None,
                        answer: Classification) -> None:
        """An answer naming another provider id (the rule's ``other-id``) or another attempt's is a
        ``mismatch`` for a pipeline kind (docs/decisions/0061), naming both ids; one contradicting a
        settled outcome is a ``contradiction``. The attempt stays as it is."""
        if ruled.cause == "contradiction":
            await transitions.escalate(self.kind, conn, now, current, "contradiction",
                                       reminder_interval_s=self.settings.reminder_interval_s,
                                       status=answer.provider_status,
                                       **{f"answered_{self.kind.rows.provider_id}": found})
        else:
            await transitions.escalate_mismatch(self.kind, conn, now, current, found,
                                                reminder_interval_s=self.settings.reminder_interval_s)
        log.warning(f"{self.kind.name}_answer_escalated", attempt_id=str(current["attempt_id"]), cause=ruled.cause)

    async def _resolve(self, attempt: Row, epoch: int, state: AttemptState, reason: str,
                       from_state: AttemptState) -> None:
        """The executor's own stopping write, before any answer: Claimed to NotStarted (no credential),
        Started to Unknown (a request that cannot be built). Conditional on the owner's epoch."""
        now = self.clock.now()
        next_check_at = None
        if state is AttemptState.UNKNOWN:  # the reconciler's first look
            next_check_at = self.kind.timings(self.settings, stored_account(self.settings, attempt)).next_check(now, 0)
        try:
            async with self.db.transaction() as conn:
                written = await transitions.resolve(
                    self.kind, conn, now, attempt, state, reason, actor=self.presenter.service_id,
                    from_states=[from_state], epoch=epoch, next_check_at=next_check_at,
                    certifier=Certifier.of(self.settings))  # seed 001
        except Exception as error:  # noqa: BLE001 - the lease lapses and the sweeper records Unknown
            log.warning(f"{self.kind.name}_record_failed", attempt_id=str(attempt["attempt_id"]),
                        error_type=type(error).__name__)
            signals.unconfirmed(self.kind, "record")
            return
        if written is None:
            log.warning(f"{self.kind.name}_record_fenced", attempt_id=str(attempt["attempt_id"]), lease_epoch=epoch)
            return
        signals.executed(self.kind, state.value)
