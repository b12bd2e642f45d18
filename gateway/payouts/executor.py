"""The payout executor: validate, claim, Started, send, classify, record (seed 000, sections 8-11).

The only component that calls CardCo's payouts endpoint, and only after a confirmed claim and a
confirmed Started write. An unconfirmed claim or Started write sends nothing: recovery reads the
durable state later (the sweeper). A resend inside the attempt happens only after a rejection the
classification table documents as no-effect and transient, with the same key and bytes, at most
``MAX_SENDS`` times, and only while ``count_send`` confirms the lease and the send deadline.
A timeout is Unknown; nothing here ever resends after one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.payout_outcomes import (
    AttemptState,
    Classification,
    Expected,
    classify,
)
from gateway.effects.certify import Certifier
from gateway.effects.gate import SendGate
from gateway.effects.payouts import open_send, persist_payout
from gateway.payouts import attempts, history
from gateway.payouts.cardco import (
    CardCoPayouts,
    CredentialUnavailable,
    destination_digest,
)
from gateway.payouts.config import AUDIENCE, payout_account, payout_timings
from gateway.payouts.validation import (
    PayoutJob,
    Postponed,
    Presenter,
    Refused,
    Valid,
    validate,
)
from gateway.settings import Settings
from gateway.store.db import Database

MAX_SENDS = 3
EXECUTOR = Presenter("svc-payout-worker", frozenset({AUDIENCE}))
log = structlog.get_logger("gateway.payouts")


async def send_bounded(clock: Clock, count_send: Callable[[int], Awaitable[bool]],
                       send_once: Callable[[], Awaitable[Classification | str]],
                       observe: Callable[[Classification, int], Awaitable[None]]) -> Classification | str:
    """The send loop of a payout or recall attempt: before each send ``count_send`` re-checks the
    lease and the send deadline ("send.refused" when it does not confirm); ``send_once`` sends and
    classifies (or returns its own stopping code); each answer is observed; only a row the table
    marks ``resend`` (documented no-effect and transient) is sent again, after its Retry-After, at
    most ``MAX_SENDS`` times. Returns the last classification, or the stopping code."""
    for send in range(1, MAX_SENDS + 1):
        if not await count_send(send):
            return "send.refused"
        classification = await send_once()
        if isinstance(classification, str):
            return classification
        await observe(classification, send)
        if not classification.row.resend:
            break
        await clock.sleep(classification.retry_after_s)
    return classification


@dataclass(frozen=True)
class Executor:
    db: Database
    clock: Clock
    settings: Settings
    presenter: Presenter = EXECUTOR

    @property
    def provider(self) -> CardCoPayouts:
        return CardCoPayouts.of(self.settings, self.clock)

    async def run(self, job: PayoutJob) -> Postponed | str:
        """Handle one delivery; the stopping or resulting code, or Postponed (redeliver later)."""
        ids = {"payout_id": job.payout_id, "grant_id": job.grant_id, "correlation_id": job.correlation_id}
        result = await validate(self.db, self.clock.now(), job, self.presenter)
        if isinstance(result, Postponed):
            log.info("payout_delivery_postponed", code=result.code, **ids)
            return result
        if isinstance(result, Refused):
            await self._record_delivery(job, result.code, result.grant, result.detail)
            return result.code
        return await self._claim_and_send(job, result, ids)

    async def _record_delivery(self, job: PayoutJob, code: str, grant: dict[str, Any] | None,
                               detail: dict[str, Any] | None = None) -> None:
        """Evidence of a refused or lost delivery. A refusal without a known grant is only logged:
        a message naming no grant belongs to no payout we can attach evidence to."""
        log.warning("payout_delivery_refused", code=code, payout_id=job.payout_id, grant_id=job.grant_id,
                    correlation_id=job.correlation_id, presenter=self.presenter.service_id)
        if grant is None:
            return
        async with self.db.transaction() as conn:
            await history.append(conn, grant["payout_id"], "delivery", actor=self.presenter.service_id,
                                 now=self.clock.now(), grant_id=grant["grant_id"], correlation_id=job.correlation_id,
                                 detail={"code": code, **(detail or {})})

    async def _claim_and_send(self, job: PayoutJob, valid: Valid, ids: dict[str, str]) -> str:
        pepper = self.settings.token_pepper.get_secret_value()
        try:
            outcome = await attempts.claim(
                self.db, self.clock.now(), payout_timings(self.settings), grant=valid.grant, payout=valid.payout,
                versions=valid.versions, worker_id=self.presenter.service_id,
                provider_account=payout_account(self.settings).id,
                digest=lambda token: destination_digest(pepper, token),
                record_effect=lambda conn, attempt, token: persist_payout(  # seed 001 (issue 8)
                    conn, attempt, token, account=payout_account(self.settings), now=self.clock.now(),
                    actor=self.presenter.service_id, reminder_interval_s=self.settings.reminder_interval_s))
        except Exception as error:  # noqa: BLE001 - the commit may have happened: never send, let recovery read
            log.warning("payout_claim_unconfirmed", error_type=type(error).__name__, **ids)
            return "claim.unconfirmed"
        if isinstance(outcome, attempts.NotClaimed):
            await self._record_delivery(job, outcome.code, valid.grant)
            return outcome.code
        attempt, epoch = outcome.attempt, outcome.attempt["lease_epoch"]
        ids = ids | {"attempt_id": str(attempt["attempt_id"])}
        provider = self.provider
        try:
            key = provider.credential()
        except CredentialUnavailable:
            await self._resolve(attempt, epoch, AttemptState.NOT_STARTED, "credential.unavailable",
                                from_state=AttemptState.CLAIMED)
            return "credential.unavailable"
        if not await attempts.mark_started(self.db, self.clock.now(), attempt, epoch):
            log.warning("payout_not_sent", code="start.unconfirmed", **ids)
            return "start.unconfirmed"
        return await self._send(provider, attempt, epoch, outcome.destination_token, key, ids)

    async def _send(self, provider: CardCoPayouts, attempt: dict[str, Any], epoch: int, token: str, key: str,
                    ids: dict[str, str]) -> str:
        expected = Expected(attempt["client_reference"], attempt["amount_minor"], attempt["currency"])

        async def counted(send: int) -> bool:
            if await attempts.count_send(self.db, self.clock.now(), attempt, epoch):
                return True
            log.warning("payout_send_refused", send=send, **ids)
            return False

        async def send_once() -> Classification | str:
            # Seed 001 (issue 8): every send re-derives the effect digest from the body it carries.
            refused = await open_send(SendGate(self.db, self.clock, self.settings.reminder_interval_s), attempt,
                                      provider.account, token, pepper=provider.pepper, actor=self.presenter.service_id)
            if refused is not None:
                await self._resolve(attempt, epoch, AttemptState.UNKNOWN, f"request.not-buildable.{refused}",
                                    from_state=AttemptState.STARTED)
                return f"request.not-buildable.{refused}"
            return classify(await provider.submit(attempt, token, key), expected)

        classification = await send_bounded(self.clock, counted, send_once,
                                            lambda seen, send: self._observe(attempt, seen, send))
        if isinstance(classification, str):
            return classification
        if classification.row.resend:  # sends exhausted: Started with a recorded send failure; recovery follows
            return classification.reason
        await self._resolve(attempt, epoch, classification.state, classification.reason,
                            from_state=AttemptState.STARTED, classification=classification)
        return classification.state.value

    async def _observe(self, attempt: dict[str, Any], classification: Classification, send: int) -> None:
        async with self.db.transaction() as conn:
            await history.append(conn, attempt["payout_id"], "provider_observation", actor=self.presenter.service_id,
                                 now=self.clock.now(), attempt_id=attempt["attempt_id"],
                                 detail={"send": send, "reason": classification.reason,
                                         "classification_table": classification.table,
                                         "attempt_state": classification.state.value,
                                         "provider_payout_id": classification.provider_payout_id,
                                         "provider_status": classification.provider_status})

    async def _resolve(self, attempt: dict[str, Any], epoch: int, state: AttemptState, reason: str, *,
                       from_state: AttemptState, classification: Classification | None = None) -> None:
        timings = payout_timings(self.settings)
        now = self.clock.now()
        unresolved = state in (AttemptState.STARTED, AttemptState.UNKNOWN)
        try:
            async with self.db.transaction() as conn:
                written = await attempts.resolve(
                    conn, now, attempt, state, reason, actor=self.presenter.service_id, from_states=[from_state],
                    epoch=epoch, provider_payout_id=classification.provider_payout_id if classification else None,
                    provider_status=classification.provider_status if classification else None,
                    next_check_at=timings.next_check(now, 0) if unresolved else None,
                    certifier=Certifier.of(self.settings))  # seed 001 (issue 8)
        except Exception as error:  # noqa: BLE001 - the lease lapses and the sweeper records Unknown
            log.warning("payout_record_failed", payout_id=attempt["payout_id"], attempt_id=str(attempt["attempt_id"]),
                        error_type=type(error).__name__)
            return
        if written is None:
            log.warning("payout_record_fenced", payout_id=attempt["payout_id"], attempt_id=str(attempt["attempt_id"]),
                        lease_epoch=epoch)
