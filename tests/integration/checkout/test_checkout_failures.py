"""Crash points, lost writes, budgets and races around the checkout endpoint (seed 004 test matrix).

Crashes are simulated by aborting between two steps (calling the repository's steps one by one
and stopping); lost or slow writes by a real second connection holding the order row lock while
the injected clock fires the start or record budget; races by real concurrent transactions.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.domain.attempts import Evidence
from gateway.payments.attempts import Attempt, Attempts, _LostToIndex, stored_request
from gateway.payments.client import PaymentClient
from tests.conftest import TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop


async def _wait_until_blocked(shop: Shop, min_waiting: int = 1) -> None:
    """Until some backend of this database waits on a lock (the step under test is blocked)."""
    for _ in range(400):
        row = await shop.services.db.fetch_one(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        if row and row["n"] >= min_waiting:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("nothing blocked on the lock")


async def _lock_order(database_url: str, order_id: str) -> psycopg.AsyncConnection:  # type: ignore[type-arg]
    holder = await psycopg.AsyncConnection.connect(database_url)
    await holder.execute("SELECT 1 FROM orders WHERE order_id = %s FOR NO KEY UPDATE", (order_id,))
    return holder


async def test_a_crash_after_inserting_not_started_leaves_a_scheduled_attempt(shop: Shop, clock: ManualClock) -> None:
    """Seed 004 matrix: "A crash right after inserting NotStarted ... leaves an attempt with a
    next_check_at that recovery finds on time" (created_at + abandonment threshold)."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    assert attempt["state"] == "NotStarted"
    assert attempt["next_check_at"] == clock.now() + timedelta(seconds=60)
    assert shop.provider_requests() == []


async def test_a_crash_after_started_leaves_an_intent_without_result_and_a_schedule(shop: Shop, clock: ManualClock) -> None:
    """Seed 004 matrix: "A crash between the send_intent commit and the send leaves an attempt ...
    the history shows an intent with no result rather than a send that did not happen"; the
    Started transition moves next_check_at past the call and record budgets plus processing time."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    started = await shop.services.attempts.mark_started(attempt)
    assert started is not None and started["state"] == "Started"
    assert started["first_sent_at"] == clock.now()
    assert started["escalation_deadline"] == clock.now() + timedelta(seconds=86_400 - 3_600)
    assert started["next_check_at"] == clock.now() + timedelta(seconds=15 + 5 + 10)
    assert await shop.events(attempt["attempt_id"]) == ["send_intent"]
    assert shop.provider_requests() == []


async def test_exactly_one_caller_wins_the_started_transition(shop: Shop) -> None:
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    results = await asyncio.gather(*(shop.services.attempts.mark_started(attempt) for _ in range(5)))
    assert len([r for r in results if r is not None]) == 1
    assert await shop.events(attempt["attempt_id"]) == ["send_intent"]


async def test_a_cancellation_committed_before_started_prevents_the_send(shop: Shop) -> None:
    """Seed 004 matrix: "An order cancellation committed before the Started transition ... prevents that send"."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    cancelled = await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert cancelled.json()["state"] == "CancelRequested"
    assert await shop.services.attempts.mark_started(attempt) is None
    response = await shop.pay()
    assert (response.status_code, response.json()["code"]) == (409, "order.cancelled")
    assert shop.provider_requests() == []


async def test_an_unconfirmed_started_transition_is_503_then_a_bounded_retry_sends_exactly_once(
        shop: Shop, clock: ManualClock, database_url: str) -> None:
    """Seed 004 matrix: "A NotStarted attempt whose Started transition failed makes the POST return
    503 with Retry-After, while the status GET returns 202 with the NotStarted state; the page's
    bounded retry sends it exactly once, and stops after its limit if the transition keeps failing"
    and "A TryMarkStartedAsync whose commit is unconfirmed returns the attempt's durable status"."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1")
    # A real second connection holds the attempt row, so the Started write blocks until the start
    # budget on the injected clock cuts it off: its outcome is unconfirmed.
    holder = await psycopg.AsyncConnection.connect(database_url)
    await holder.execute("SELECT 1 FROM payment_attempts WHERE attempt_id = %s FOR UPDATE", (attempt["attempt_id"],))
    try:
        for _ in range(3):  # the page's bounded retries, each cut off by the start budget
            pending = asyncio.create_task(shop.pay())
            await _wait_until_blocked(shop)
            clock.advance(5)  # the start budget
            response = await pending
            assert response.status_code == 503 and response.headers["retry-after"] == "2"
            assert response.json()["code"] == "payment.not_started"
            assert response.json()["attempt"]["state"] == "NotStarted"
        polled = await shop.status()
        assert (polled.status_code, polled.json()["state"]) == (202, "NotStarted")
        assert shop.provider_requests() == []
    finally:
        await holder.close()
    retried = await shop.pay()
    assert retried.json()["state"] == "Succeeded"
    assert len(shop.provider_requests()) == 1 and len(await shop.attempts()) == 1


async def test_an_unrecorded_outcome_returns_the_durable_status_and_leaves_it_to_recovery(
        shop: Shop, clock: ManualClock, database_url: str) -> None:
    """Seed 004 matrix: "A recording failure or lost commit acknowledgement after the provider
    responds ... returns the attempt's current durable status" and "A failure to report an
    unrecorded outcome does not prevent the endpoint from returning the attempt's durable status"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 300})
    pending = asyncio.create_task(shop.pay())
    for _ in range(400):  # wait for the send to start (the attempt is Started), then block its recording
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    holder = await _lock_order(database_url, "ORD-5521")
    try:
        await _wait_until_blocked(shop)
        clock.advance(5)  # the record budget
        response = await pending
    finally:
        await holder.close()
    assert (response.status_code, response.json()["state"]) == (202, "Started")
    [attempt] = await shop.attempts()
    assert await shop.events(attempt["attempt_id"]) == ["send_intent"]
    assert [p["status"] for p in shop.ledger()] == ["succeeded"]


async def test_a_closed_tab_cancels_neither_the_call_nor_the_recording(shop: Shop) -> None:
    """Seed 004 matrix: "A closed browser tab during the call does not cancel the provider call or
    the recording of its outcome" and "A customer closing the tab during the Started transition
    leaves that transition confirmed"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 200})
    request = asyncio.create_task(shop.services.checkout.pay("ORD-5521", "cus_1"))
    for _ in range(400):
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    await shop.services.checkout.drain()
    [attempt] = await shop.attempts()
    assert attempt["state"] == "Succeeded"
    assert await shop.events(attempt["attempt_id"]) == ["send_intent", "send_result", "transition"]


async def test_a_late_unknown_does_not_overwrite_a_notifications_success(shop: Shop) -> None:
    """Seed 004 matrix: "A notification that arrives before the endpoint records its timeout wins:
    the late Unknown write does not overwrite Succeeded"; the confirmation is queued once."""
    await shop.order()
    attempts = shop.services.attempts
    attempt = await attempts.mark_started(await attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    success = Evidence(finding="succeeded", provider_account=TEST_ACCOUNT, provider_id="pay_1",
                       amount_minor=4250, currency="EUR")
    await attempts.apply_evidence(attempt["attempt_id"], success, actor="notification-handler", kind=None)
    late = await attempts.record_response(attempt["attempt_id"], Evidence(
        finding="unknown", provider_account=TEST_ACCOUNT, reason="provider.no-response.caller"), actor="endpoint")
    assert late["state"] == "Succeeded" and late["provider_payment_id"] == "pay_1"
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_success_racing_a_new_checkout_leaves_one_attempt_that_took_effect(shop: Shop) -> None:
    """Seed 004 matrix: "Success recorded at the same moment as a new checkout request leaves the
    order Paid with exactly one attempt that took effect" (real concurrent transactions)."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    unknown = (await shop.pay()).json()
    success = Evidence(finding="succeeded", provider_account=TEST_ACCOUNT, amount_minor=4250, currency="EUR",
                       provider_id=shop.ledger()[0]["id"])
    results = await asyncio.gather(
        shop.services.attempts.apply_evidence(unknown["attempt_id"], success, actor="recovery-1", kind="lookup"),
        shop.pay(), shop.pay(), return_exceptions=True)
    assert not [r for r in results if isinstance(r, BaseException)]
    for response in results[1:]:
        assert response.status_code in (202, 409)  # type: ignore[union-attr]
    [attempt] = await shop.attempts()
    assert attempt["state"] == "Succeeded"
    assert (await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)).json()["state"] == "Paid"
    assert len(shop.ledger()) == 1


async def test_an_insert_that_loses_to_a_lock_skipping_writer_returns_the_winner(shop: Shop, database_url: str) -> None:
    """Seed 004 matrix: "An insert that violates the partial unique index from a writer that skipped
    the order lock returns the winning attempt without querying inside an aborted transaction".
    The effect record sent with the losing insert is rolled back with it (seed 001: a
    record exists only for an attempt that does)."""
    await shop.order()
    rogue = await psycopg.AsyncConnection.connect(database_url)
    try:
        await rogue.execute(
            "INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account,"
            " endpoint, api_version, client_reference, idempotency_key, request_body, amount_minor, currency, state,"
            " created_at, next_check_at) SELECT gen_random_uuid(), order_id, customer_id, 7, provider_account,"
            " 'http://cardco.test/v1/payments', '2026-11-01', 'ORD-5521-admin', gen_random_uuid()::text, '{}',"
            " amount_minor, currency, 'NotStarted', now(), now() FROM orders WHERE order_id = 'ORD-5521'")
        ours = asyncio.create_task(shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
        await _wait_until_blocked(shop)
        await rogue.commit()
        winner = await ours
    finally:
        await rogue.close()
    assert (winner["attempt_number"], winner["client_reference"]) == (7, "ORD-5521-admin")
    assert len(await shop.attempts()) == 1
    assert await shop.services.db.fetch_all("SELECT attempt_id FROM effect_records") == []


async def test_a_caller_without_budget_is_cut_off_by_the_maximum_call_duration(shop: Shop, clock: ManualClock) -> None:
    """Seed 004 matrix: "A caller that passes no budget is still cut off by the payment client's
    maximum call duration" and "Advancing FakeTimeProvider fires the ... call ... budgets"."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 60_000})
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    call = asyncio.create_task(shop.services.payments.create_payment(stored_request(attempt), budget_s=None))
    for _ in range(400):
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    clock.advance(29.9)
    await asyncio.sleep(0.01)
    assert not call.done()
    clock.advance(0.1)
    evidence = await asyncio.wait_for(call, 5)
    assert (evidence.finding, evidence.reason) == ("unknown", "provider.no-response.client-ceiling")


async def test_the_callers_budget_fires_before_the_ceiling(shop: Shop, clock: ManualClock) -> None:
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 60_000})
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    call = asyncio.create_task(shop.services.payments.create_payment(stored_request(attempt), budget_s=15))
    for _ in range(400):
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    clock.advance(15)
    evidence = await asyncio.wait_for(call, 5)
    assert evidence.reason == "provider.no-response.caller"


@pytest.mark.parametrize("change, reason", [
    ({"provider_account": "cardco:acct_store:gone"}, "request.not-buildable.account-not-configured"),
    ({"endpoint": "http://cardco-eu.test/v1/payments"}, "request.not-buildable.endpoint-changed"),
    ({"api_version": "2025-01-01"}, "request.not-buildable.api-version-changed"),
])
async def test_a_stored_request_that_cannot_be_built_is_unknown_and_nothing_is_sent(
        shop: Shop, change: dict[str, str], reason: str) -> None:
    """Seed 004 matrix: "A changed endpoint, region, or account between sends, or a stored account
    that is no longer configured, is refused before anything is sent" and "A stored request that
    cannot be built ... records Unknown with its reason"."""
    await shop.order()
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    evidence = await shop.services.payments.create_payment(stored_request({**attempt, **change}), budget_s=15)
    assert (evidence.finding, evidence.reason) == ("unknown", reason)
    assert shop.provider_requests() == []


async def test_a_config_change_does_not_move_a_stamped_escalation_deadline(shop: Shop) -> None:
    """Seed 004 matrix: "A provider-account configuration change does not move the stamped
    escalation_deadline of an attempt already Started"."""
    await shop.order()
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    account = shop.services.settings.provider_accounts[0]
    shop.services.settings.provider_accounts[0] = account.model_copy(update={"key_window_s": 7200.0})
    try:
        reread = await shop.services.attempts.get(attempt["attempt_id"])
    finally:
        shop.services.settings.provider_accounts[0] = account
    assert reread["escalation_deadline"] == attempt["escalation_deadline"]


async def test_a_stored_action_is_shown_after_a_restart(shop: Shop, settings: object, clock: ManualClock) -> None:
    """Seed 004 matrix: "A stored customer action is returned by the status GET after an application restart"."""
    import httpx

    from gateway.app import create_app
    from gateway.services import Services

    await shop.order(payment_method="pm_card_3ds")
    first = await shop.pay()
    restarted = await Services.open(shop.services.settings, clock)
    try:
        app = create_app(shop.services.settings, services=restarted)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http:
            polled = await http.get("/v1/orders/ORD-5521/payment/status", headers=shop.customer)
    finally:
        await restarted.close()
    assert polled.status_code == 200 and polled.json()["next_action"] == first.json()["next_action"]


async def test_an_unknown_attempt_never_surfaces_an_action(shop: Shop) -> None:
    """Seed 004: "an Unknown attempt cannot surface a stale challenge"."""
    await shop.order(payment_method="pm_card_3ds")
    started = (await shop.pay()).json()
    unknown = await shop.services.attempts.apply_evidence(
        started["attempt_id"], Evidence(finding="unknown", provider_account=TEST_ACCOUNT, reason="test"),
        actor="recovery-1", kind="lookup")
    assert unknown["state"] == "Unknown" and unknown["next_action"] is None
    polled = await shop.status()
    assert polled.status_code == 202 and polled.json()["next_action"] is None


@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadTimeout, httpx.WriteError,
                                     httpx.RemoteProtocolError, httpx.PoolTimeout, httpx.ReadError])
async def test_any_transport_failure_is_unknown(shop: Shop, failure: type[httpx.TransportError]) -> None:
    """Seed 004 matrix: "A TimeoutRejectedException, an open-circuit rejection, a malformed body, and
    an empty body each produce Unknown" — here, every exception the transport layer raises."""
    await shop.order()
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    def fail(request: httpx.Request) -> httpx.Response:
        raise failure("the network failed", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(fail)) as broken:
        client = PaymentClient(shop.services.settings, shop.services.clock, broken)
        evidence = await client.create_payment(stored_request(attempt), budget_s=15)
    assert (evidence.finding, evidence.reason) == ("unknown", f"provider.transport.{failure.__name__}")


class _WinnerResolvesFirst(Attempts):
    """The race the fault campaign met (default run, three times): the attempt that won
    the live-attempt index is resolved (here closed never-sent, as recovery closes a stale
    NotStarted) between the losing insert and the loser's reload of the winner."""

    async def _get_or_create_live(self, order_id: str, customer_id: str) -> Attempt:
        try:
            return await super()._get_or_create_live(order_id, customer_id)
        except _LostToIndex:
            async with self._db.transaction() as conn:
                await conn.execute("UPDATE payment_attempts SET state = 'NotApplied', outcome_reason = 'never-sent', "
                                   "version = version + 1 WHERE order_id = %s AND state = 'NotStarted'", (order_id,))
            raise


async def test_a_second_click_that_lost_the_index_to_an_attempt_resolved_since_reloads_that_attempt(
        shop: Shop, database_url: str) -> None:
    """Seed 004, PayAsync's first transaction: an insert that lost to another live attempt is
    rolled back and the *winning attempt* is reloaded, even when it is no longer live by then. The
    second click read the order under its lock with a snapshot from before the first click's
    insert (a writer the lock did not stop here), so it saw no live attempt and lost the index;
    the reload found no live attempt and raised VersionConflict, answered 500 to the customer."""
    await shop.order()
    attempts = _WinnerResolvesFirst(shop.services.db, shop.services.clock, shop.services.settings)
    holder = await _lock_order(database_url, "ORD-5521")
    try:
        second = asyncio.create_task(attempts.get_or_create_live("ORD-5521", "cus_1"))
        await _wait_until_blocked(shop)  # its statement's snapshot holds no attempt
        async with shop.services.db.transaction() as conn:  # the first click's insert, past the lock
            _, insert = await attempts._insert(conn, {**(await shop.services.orders.get("ORD-5521")),
                                                      "next_attempt_number": 1})
        first = await insert.fetchone()
        assert first is not None
    finally:
        await holder.close()
    reloaded = await second
    assert reloaded["attempt_id"] == first["attempt_id"] and reloaded["state"] == "NotApplied"
    assert len(await shop.attempts()) == 1 and shop.provider_requests() == []


async def test_an_answer_recorded_after_a_notification_moved_the_attempt_is_decided_on_the_attempt_as_it_is(
        shop: Shop) -> None:
    """Seed 004, "Persisting the Attempt": every write is conditional on the state and version read
    under the lock. The endpoint's answer is sent with the attempt's lock, decided on the attempt
    as its Started transition left it; a notification's success committed during the provider call
    moved it, so that write is rolled back and the answer applied to the attempt as the lock read
    it: Succeeded once, one confirmation, one certificate (seed 001), the answer kept as a
    send_result event."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 300})
    paying = asyncio.create_task(shop.pay())
    for _ in range(200):  # until the request is at CardCo: Started has committed
        if shop.provider_requests():
            break
        await asyncio.sleep(0.01)
    [started] = await shop.attempts()
    assert started["state"] == "Started"
    success = Evidence(finding="succeeded", provider_account=TEST_ACCOUNT, provider_id=shop.ledger()[0]["id"],
                       amount_minor=4250, currency="EUR")
    await shop.services.attempts.apply_evidence(started["attempt_id"], success, actor="notification-handler",
                                                kind=None)
    paid = await paying
    assert (paid.status_code, paid.json()["state"]) == (200, "Succeeded")
    [attempt] = await shop.attempts()
    assert (attempt["state"], attempt["version"]) == ("Succeeded", started["version"] + 2)  # each write once
    assert await shop.events(attempt["attempt_id"]) == ["send_intent", "transition", "send_result"]
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    certificates = await shop.services.db.fetch_all(
        "SELECT certificate FROM effect_certificates WHERE attempt_id = %(a)s", {"a": attempt["attempt_id"]})
    assert len(certificates) == 1
    assert paid.json()["effect"]["protocol_state"] == "CERTIFIED"
