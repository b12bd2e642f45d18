"""Seed 000, "Decision and Execution Matrix", the rows where the claim is won or contested and the
provider answers (or does not), with Traces D, E and F, and the "Additional tests should prove"
items about claims, Started, leases and resends. Provider calls are counted from CardCo's own
request log; money that moved, from its ledger."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
import respx
from pydantic import SecretStr

from gateway.clock import ManualClock
from gateway.domain.outcomes import AttemptState
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.config import payout_account
from gateway.payouts.sweeper import sweep_once
from gateway.pipeline import effects, transitions
from gateway.providers import Operation, contract
from gateway.providers.calls import ProviderCalls
from gateway.providers.cardco.tables import PAYOUT_TABLE_VERSION
from gateway.store.db import Connection, Database
from provider_fake import objects
from tests.integration.answer_support import RUINS, ruin_answers
from tests.integration.clock_support import next_wake
from tests.integration.metrics_support import scrape
from tests.integration.payouts.conftest import AMOUNT, World


class LosesCommitAcknowledgment(Database):
    """The ``fail_at``-th transaction commits, then its caller sees a connection error: the seed's
    "claim commits but its acknowledgment is lost"."""

    def __init__(self, inner: Database, fail_at: int) -> None:
        super().__init__(inner.pool)
        self.opened = 0
        self.fail_at = fail_at

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        self.opened += 1
        async with super().transaction() as conn:
            yield conn
        if self.opened == self.fail_at:
            raise psycopg.OperationalError("connection lost while COMMIT was in flight")


async def _attempt(world: World, payout_id: str = "PAY-3107") -> dict[str, Any]:
    [row] = await world.rows("SELECT * FROM payout_attempts WHERE payout_id = %(p)s ORDER BY attempt_number DESC "
                             "LIMIT 1", p=payout_id)
    return row


async def test_trace_d_two_workers_racing_for_one_grant_make_one_call(world: World) -> None:
    """Matrix: "Two workers race for one grant -> one wins, one claim.lost, 1 call in total";
    Additional: "concurrent claims on one grant produce exactly one attempt and one provider call"."""
    job = await world.approved()
    results = await asyncio.gather(*(world.run(job) for _ in range(4)))
    assert sorted(results).count("Started") == 1
    assert set(results) - {"Started"} <= {"claim.lost", "grant.consumed"}
    assert len(world.submits()) == 1
    assert len((await world.payout())["attempts"]) == 1


async def test_a_claim_whose_commit_acknowledgment_is_lost_sends_nothing_and_is_swept_to_not_started(
        world: World) -> None:
    """Matrix: "Claim commits but its acknowledgment is lost -> worker does not send, 0 calls,
    Claimed, then NotStarted after the sweeper fences, back to Approved awaiting fresh authority".
    Seed 000 section 21, "Unconfirmed commits and fenced Claimed attempts. Each
    one is a payout that needs fresh authority"): /metrics counts both."""
    job = await world.approved()
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=2)  # validation, then the claim
    assert await world.executor(db=lossy).run(job) == "claim.unconfirmed"
    assert world.submits() == []
    assert (await _attempt(world))["state"] == "Claimed"
    assert await world.run(job) == "grant.consumed"  # the redelivery finds the durable claim
    await world.sweep()
    assert (await _attempt(world))["state"] == "Claimed"  # the lease has not lapsed yet
    world.clock.advance(400)
    await world.sweep()
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["lease_epoch"]) == ("NotStarted", 2)
    payout = await world.payout()
    assert (payout["state"], [g["state"] for g in payout["grants"]]) == ("Approved", ["Consumed"])
    assert await world.totals() == (0, 0)
    assert world.submits() == []
    seen = await scrape(world.http)
    assert seen.value("paygate_payout_unconfirmed_writes_total", kind="payout", step="claim") == 1
    assert seen.value("paygate_payout_leases_fenced_total", kind="payout", state="NotStarted") == 1
    assert seen.value("paygate_payout_leases_fenced_total", kind="payout", state="Unknown") == 0


async def test_a_started_write_that_cannot_be_confirmed_sends_nothing(world: World) -> None:
    """Additional: "a worker whose Started write is refused or unconfirmed does not send"; the
    sweeper then finds it Started (it may have committed) and records Unknown, never NotStarted."""
    job = await world.approved()
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=3)  # validation, claim, Started
    assert await world.executor(db=lossy).run(job) == "start.unconfirmed"
    assert world.submits() == []
    world.clock.advance(400)
    await world.sweep()
    assert ((await _attempt(world))["state"], (await world.payout())["state"]) == ("Unknown", "Unknown")


async def test_a_fenced_worker_can_neither_start_nor_record(world: World) -> None:
    """Additional: "an attempt left in Claimed is classified NotStarted only after the sweeper
    fences the old worker" and "a worker that lost its lease cannot write a state transition"."""
    job = await world.approved()
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=2)
    await world.executor(db=lossy).run(job)
    stale = await _attempt(world)
    world.clock.advance(400)
    await world.sweep()
    assert not await transitions.mark_started(PAYOUT, world.services.db, world.clock.now(), stale, stale["lease_epoch"])
    async with world.services.db.transaction() as conn:
        written = await transitions.resolve(PAYOUT, conn, world.clock.now(), stale, AttemptState.FAILED, "late",
                                            actor="old-worker", from_states=[AttemptState.NOT_STARTED],
                                            epoch=stale["lease_epoch"])
    assert written is None
    assert (await _attempt(world))["state"] == "NotStarted"


async def test_a_provider_credential_unavailable_before_send_is_not_started(world: World) -> None:
    """Matrix: "Provider credential unavailable before send -> won, 0 calls, NotStarted, back to
    Approved, awaiting fresh authority"."""
    job = await world.approved()
    account = payout_account(world.settings)
    settings = world.settings.model_copy(update={"provider_accounts": [
        account.model_copy(update={"api_key": SecretStr("")}), *world.settings.provider_accounts[1:]]})
    assert await world.executor(settings=settings).run(job) == "credential.unavailable"
    assert world.submits() == []
    assert ((await _attempt(world))["state"], (await world.payout())["state"]) == ("NotStarted", "Approved")
    assert await world.totals() == (0, 0)


async def test_trace_e_destination_closed_fails_the_attempt_and_leaves_the_decision_allowed(world: World) -> None:
    """Matrix: "Provider rejects: destination closed -> Allowed, unchanged; 1 call; Failed; Failed";
    Trace E: no automatic resend; the reservation is released."""
    await world.faults({"operation": "create_payout", "action": "decline", "code": "destination_closed"})
    job = await world.approved()
    assert await world.run(job) == "Failed"
    payout = await world.payout()
    assert (payout["state"], payout["attempts"][0]["outcome_reason"]) == ("Failed", "destination_closed")
    assert [d["outcome"] for d in payout["decisions"]] == ["Allowed"]
    assert len(world.submits()) == 1
    assert await world.totals() == (0, 0)
    [observed] = [e["detail"] for e in await world.history() if e["kind"] == "provider_observation"]
    assert observed["classification_table"] == PAYOUT_TABLE_VERSION, "the evidence names the table that classified it"


async def test_a_rate_limited_send_is_resent_with_the_same_key_and_bytes(world: World) -> None:
    """Matrix: "Provider rate-limits, documented no-effect -> 1 call per send, bounded"; section 14:
    an execution retry inside the attempt, same key and parameters, before the send deadline."""
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": 0})
    job = await world.approved()
    assert await world.run(job) == "Started"
    sent = world.submits()
    assert len(sent) == 2
    assert sent[0]["body_base64"] == sent[1]["body_base64"]
    assert sent[0]["headers"]["idempotency-key"] == sent[1]["headers"]["idempotency-key"] == "payout-PAY-3107-a1"
    assert (await _attempt(world))["sends"] == 2


async def test_a_resend_carries_the_first_sends_request_not_a_rebuild(world: World,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind resends exactly the bytes of its first send under its stored key (checkout: its
    stored bytes; a payout: bytes rebuilt once with the destination token in hand and proven by the
    send gate's digest): the request is made once per claim, and the send after a 429 carries that
    same request again, proven by the gate once more (gateway.pipeline.effects.open_send)."""
    made: list[str] = []
    real = effects.operation

    def counting(kind: Any, account_id: str) -> Any:
        contract = real(kind, account_id)

        def request(attempt: dict[str, Any], secret: str | None) -> Any:
            made.append(str(attempt["attempt_id"]))
            return contract.request(attempt, secret)
        return dataclasses.replace(contract, request=request)

    monkeypatch.setattr(effects, "operation", counting)
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": 0})
    job = await world.approved()
    made.clear()  # the decision derived its intent from the request too
    assert await world.run(job) == "Started"
    sent = world.submits()
    assert len(sent) == 2 and sent[0]["body_base64"] == sent[1]["body_base64"]
    assert len(made) == 2  # the claim's effect record, then the first send; the resend makes none


async def test_rate_limiting_that_never_ends_is_bounded(world: World) -> None:
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": 0, "times": 0})
    job = await world.approved()
    assert await world.run(job) == "provider.rate-limited"
    assert len(world.submits()) == 3
    assert (await _attempt(world))["state"] == "Started"


def _sent_at(world: World) -> list[float]:
    """When CardCo received each payout send, in seconds after the first (its request log)."""
    times = [datetime.fromisoformat(r["received_at"].replace("Z", "+00:00")) for r in world.submits()]
    return [(t - times[0]).total_seconds() for t in times]


async def test_a_429_with_retry_after_is_resent_after_exactly_that_wait(world: World) -> None:
    """Seed 000 matrix: "Provider rate-limits, documented no-effect -> 1 call per send, bounded";
    the resend waits the answer's Retry-After on the injected clock."""
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": 5})
    job = await world.approved()
    run = asyncio.create_task(world.run(job))
    wake = await next_wake(world.clock, run)
    assert wake is not None and (wake - world.clock.now()).total_seconds() == 5
    world.clock.advance(4.9)
    assert await next_wake(world.clock, run) == wake and len(world.submits()) == 1
    world.clock.set(wake)
    assert await run == "Started"
    assert _sent_at(world) == [0, 5]


async def test_a_429_without_retry_after_waits_1_s_then_2_s(world: World) -> None:
    """With no Retry-After (Stripe does not document one), a resend at once would
    meet the same limiter: the resends wait 1 s, then 2 s (doubling per 429 of the attempt), then the
    sends are spent and the attempt stays Started for the reconciler."""
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": None, "times": 0})
    job = await world.approved()
    run = asyncio.create_task(world.run(job))
    waits = []
    while (wake := await next_wake(world.clock, run)) is not None:
        waits.append((wake - world.clock.now()).total_seconds())
        world.clock.set(wake)
    assert await run == "provider.rate-limited"
    assert waits == [1, 2]
    assert _sent_at(world) == [0, 1, 3]
    assert (await _attempt(world))["state"] == "Started"


async def test_no_resend_waits_past_the_send_deadline(world: World) -> None:
    """Seed 000: a bounded resend happens "before the attempt's send deadline" (300 s after the
    claim): a second Retry-After of 200 s would end past it, so there is no wait and no third send."""
    await world.faults({"operation": "create_payout", "action": "rate_limit", "retry_after_s": 200, "times": 0})
    job = await world.approved()
    run = asyncio.create_task(world.run(job))
    wake = await next_wake(world.clock, run)
    assert wake is not None
    world.clock.set(wake)
    assert await next_wake(world.clock, run) is None  # the second 429 leaves no time: no wait at all
    assert await run == "provider.rate-limited"
    assert _sent_at(world) == [0, 200]
    assert (await _attempt(world))["state"] == "Started"


async def test_no_send_happens_after_the_send_deadline(world: World) -> None:
    """Additional: "no resend happens after the attempt's send deadline": the pre-send check
    refuses once the deadline passed, whoever holds the lease."""
    job = await world.approved()
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=3)  # Started committed, unconfirmed
    await world.executor(db=lossy).run(job)
    attempt = await _attempt(world)
    assert attempt["state"] == "Started"
    world.clock.advance(299)
    assert await transitions.count_send(PAYOUT, world.services.db, world.clock.now(), attempt, attempt["lease_epoch"])
    world.clock.advance(1)
    assert not await transitions.count_send(PAYOUT, world.services.db, world.clock.now(), attempt, attempt["lease_epoch"])
    assert world.submits() == []


@pytest.mark.parametrize("ruin", sorted(RUINS))
async def test_an_unreadable_answer_is_unknown_at_once(world: World, cardco_http: respx.MockRouter, ruin: str) -> None:
    """Seed 004, "The Payment Client": "incomplete or unreadable responses" map to Unknown: a body httpx
    cannot decode, or a connection cut mid-answer, after CardCo paid. The
    attempt is Unknown as soon as the call returns, with no lease to lapse, and blocks a second payout."""
    ruin_answers(cardco_http, "POST", lambda path: path == "/v1/payouts", RUINS[ruin])
    job = await world.approved()
    assert await world.run(job) == "Unknown"
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["outcome_reason"]) == ("Unknown", "provider.no-response")
    assert len(world.submits()) == 1
    assert len(world.ledger()) == 1  # CardCo paid, once
    refused = await world.post("/v1/payouts/PAY-3107/reauthorize", {})
    assert (refused.status_code, refused.json()["code"]) == (409, "payout.attempt_unresolved")


async def test_trace_f_a_timeout_after_acceptance_is_unknown_and_blocks_a_second_payout(world: World) -> None:
    """Matrix: "Provider times out after accepting -> 1 call, Unknown, Unknown"; "Redelivery after
    the claim -> duplicate delivery, 0 additional"; Trace F: new attempt blocked; section 14: a
    timeout is not a documented no-effect rejection, so no resilience-policy resend."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    job = await world.approved()
    assert await world.run(job) == "Unknown"
    assert await world.run(job) == "grant.consumed"
    refused = await world.post("/v1/payouts/PAY-3107/reauthorize", {})
    assert (refused.status_code, refused.json()["code"]) == (409, "payout.attempt_unresolved")
    payout = await world.payout()
    assert (payout["state"], [a["state"] for a in payout["attempts"]]) == ("Unknown", ["Unknown"])
    assert len(payout["decisions"]) == 1
    assert len(world.submits()) == 1
    assert len(world.ledger()) == 1  # the provider did pay, once
    assert await world.totals() == (0, AMOUNT)  # held while Unknown


async def test_a_paused_worker_that_sends_after_expiry_is_rejected_with_no_effect(world: World) -> None:
    """Additional: "a paused worker that sends after that expiry has its request rejected with no
    effect": the request carries the send deadline as expires_at and CardCo enforces it + 30 s."""
    job = await world.approved()
    lossy = LosesCommitAcknowledgment(world.services.db, fail_at=3)  # Started committed, unconfirmed
    await world.executor(db=lossy).run(job)
    world.clock.advance(300 + 31)
    attempt = await _attempt(world)
    provider = ProviderCalls(payout_account(world.settings), world.clock, world.services.http, "pepper",
                             kind="payout")
    # The paused worker had passed every local check before it paused; now it wakes and sends.
    request = contract(provider.provider, PAYOUT.name, Operation).request(attempt, "dst_tok_secret_77")
    answer = await provider.create(request.path, request.body, attempt["idempotency_key"], provider.credential())
    assert getattr(answer, "status", None) == 400
    assert world.ledger() == []
    assert timedelta(seconds=300) == attempt["send_deadline"] - attempt["claimed_at"]


async def test_an_answer_naming_another_attempts_payout_id_is_refused_by_the_index_and_escalated(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004, "Persisting the Attempt": "if recording an ID conflicts with another attempt that
    already owns it, the write fails; the application keeps both attempts exactly as they are, raises
    an investigation, and treats the conflict as proof of nothing" (the executor's
    write: one_payout_attempt_per_provider_payout, translated by its name). CardCo answers PAY-3108's
    send with the id of PAY-3107's payout: PAY-3108's attempt stays Started without it (its lease
    lapses and the reconciler looks it up), escalated as a mismatch naming both."""
    assert await world.run(await world.approved("PAY-3107")) == "Started"
    owner = await _attempt(world, "PAY-3107")
    monkeypatch.setattr(objects, "new_id", lambda prefix: owner["provider_payout_id"])  # the provider repeats an id
    await world.run(await world.approved("PAY-3108"))
    attempt = await _attempt(world, "PAY-3108")
    assert (attempt["state"], attempt["provider_payout_id"]) == ("Started", None)
    [escalation] = await world.rows("SELECT escalation_key, details FROM payment_escalations WHERE resolved_at IS NULL")
    assert escalation["escalation_key"] == f"payout-attempt:{attempt['attempt_id']}:mismatch"
    assert escalation["details"]["found_provider_payout_id"] == owner["provider_payout_id"]
    assert (await _attempt(world, "PAY-3107"))["provider_payout_id"] == owner["provider_payout_id"]



def _answer_after_the_sweeper(world: World, cardco_http: respx.MockRouter) -> None:
    """CardCo takes the send as usual; before its answer reaches the executor, the executor's lease
    lapses and the sweeper fences it (the seed's paused worker): the answer arrives late. The
    sweeper runs on a clock 400 s ahead (past the lease); the executor's own clock stays, so its
    call budget does not cut the answer off."""
    [route] = list(cardco_http.routes)  # the CardCo mount (provider_fake.inprocess.mount)
    served = route.side_effect

    async def side_effect(request: httpx.Request) -> httpx.Response:
        response: httpx.Response = await served(request)  # type: ignore[misc, operator]
        if request.method == "POST" and request.url.path == "/v1/payouts":
            later = ManualClock(world.clock.now() + timedelta(seconds=400))
            assert (await sweep_once(world.services.db, later))["attempts_fenced"] == 1
        return response

    route.side_effect = side_effect


async def test_a_send_answer_arriving_after_the_sweeper_is_evidence_and_restores_no_ownership(
        world: World, cardco_http: respx.MockRouter) -> None:
    """Seed 000 §13: "If the provider's late response ... reaches the platform first, it may resolve
    ATT-1 through the same narrow evidence write, conditional on the attempt still being Unknown. It
    records what happened to a request already sent; it does not restore any worker's ownership."
    The executor's answer goes through the one evidence rule (gateway.domain.evidence_rule.answered,
    verdict) as the attempt stands under its row lock: CardCo declined the payout (destination_closed)
    while the sweeper made the attempt Unknown, so the answer settles it Failed, on the sweeper's
    epoch. An executor that applied its answer only to its own Started, by its own epoch, left it
    Unknown (the write missed) for the reconciler."""
    await world.faults({"operation": "create_payout", "action": "decline", "code": "destination_closed"})
    _answer_after_the_sweeper(world, cardco_http)
    job = await world.approved()
    assert await world.run(job) == "Failed"
    attempt = await _attempt(world)
    assert (attempt["state"], attempt["outcome_reason"]) == ("Failed", "destination_closed")
    assert (attempt["lease_epoch"], attempt["lease_expires_at"]) == (2, None)  # the sweeper's fence stands
    assert (await world.payout())["state"] == "Failed"
    assert await world.totals() == (0, 0)  # the reservation released with the resolution
    transitions_seen = [(h["actor"], h["detail"]["attempt_state"]) for h in await world.history()
                        if h["kind"] == "transition" and "attempt_state" in h["detail"]]
    assert transitions_seen[-2:] == [("payout-sweeper", "Unknown"), ("svc-payout-worker", "Failed")]
