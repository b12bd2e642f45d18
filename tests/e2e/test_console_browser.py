"""The operator console in a real (headless) browser against a real gateway server (API.md
"Operations": "A browser console under /console/ for operators (sign-in with an operator token)";
payouts awaiting acknowledgment or approval with who may act, payouts and recalls
in Unknown with their attempts and history, stored unmatched notifications with "apply to
attempt", refunds, and a live view that refreshes without a reload).

One browser session walks every view with real clicks, over data made by the real pipeline (the
payout world and the shop, CardCo in-process, one ManualClock shared with the server). Skipped where
Chromium is not installed. ``PAYGATE_CONSOLE_SCREENSHOTS=DIR`` keeps a picture of each view; the
ones in docs/console/ were taken that way (docs/console.md).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.domain.attempts import Evidence
from gateway.escalations.store import raise_escalation
from gateway.services import Services
from gateway.settings import Settings
from paygate_local.servers import free_port
from tests.conftest import TEST_ACCOUNT
from tests.e2e.browser import CHROMIUM, Page, browser_page
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.notifications.conftest import Webhooks, payment_event
from tests.integration.payouts.conftest import World, world
from tests.integration.payouts.recall_helpers import recall_and_payout_unknown
from tests.integration.refunds.conftest import refund_job, run_refund

__all__ = ["shop", "world"]
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                  "(apt-get install chromium to run the console in a browser)")]
HOSTILE = "<img src=x onerror=document.title='pwned'>"
VIEW = "document.getElementById('view').innerText"


@pytest.fixture
def gateway_url(settings: Settings, clock: ManualClock) -> Iterator[str]:
    """The real app on a real port, in a thread with its own event loop and services, on the test's clock."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, clock=clock), host="127.0.0.1", port=port,
                                           log_level="warning", ws="none", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise AssertionError("the gateway server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


async def _escalation(services: Services, clock: ManualClock, key: str, **details: Any) -> None:
    async with services.db.transaction() as conn:
        await raise_escalation(conn, escalation_key=key, reason="deadline", now=clock.now(), reminder_interval_s=900,
                               details=details)


async def _unknown_attempt_with_escalation(services: Services, clock: ManualClock) -> str:
    await services.orders.create("merchant_1", {
        "order_id": "ORD-7001", "customer_id": "cus_1", "amount_minor": 4250, "currency": "EUR",
        "payment_method": "pm_card_visa", "provider_account": TEST_ACCOUNT})
    attempt = await services.attempts.get_or_create_live("ORD-7001", "cus_1")
    attempt = await services.attempts.mark_started(attempt) or attempt
    clock.advance(30)
    await services.attempts.apply_evidence(attempt["attempt_id"], Evidence(
        finding="unknown", provider_account=TEST_ACCOUNT, reason="timeout"), actor="recovery-1", kind="lookup")
    async with services.db.transaction() as conn:
        await raise_escalation(conn, escalation_key=f"attempt:{attempt['attempt_id']}:deadline", reason="deadline",
                               now=clock.now(), reminder_interval_s=900, attempt_id=attempt["attempt_id"],
                               details={"client_reference": "ORD-7001-a1", "note": HOSTILE})
    return str(attempt["attempt_id"])


async def _payouts(world: World) -> str:
    """Seed 000: one payout waiting for an approval, one for an acknowledgment, one Unknown (Trace
    G's lost response), a Paid one whose recall is Unknown, and an Approved one holding a grant."""
    await recall_and_payout_unknown(world)
    await world.create("PAY-BIG", 2_000_000)
    assert (await world.submit("PAY-BIG"))["outcome"] == "EscalationRecommended"
    await world.put("/v1/destinations/DST-NEW", {"beneficiary_id": "BEN-2208", "provider_token": "dst_tok_new"})
    created = await world.post("/v1/payouts", {
        "payout_id": "PAY-NEWDST", "beneficiary_id": "BEN-2208", "destination_id": "DST-NEW", "amount_minor": 1000,
        "currency": "EUR", "purpose": "deposit refund", "release_at": world.clock.now().isoformat()})
    assert created.status_code == 201, created.text
    assert (await world.submit("PAY-NEWDST"))["outcome"] == "AcknowledgmentRequired"
    await world.create("PAY-HOLD", 50_000)
    held = await world.submit("PAY-HOLD")
    assert held["outcome"] == "Allowed"
    return str(held["grant"]["grant_id"])


async def _refunds(shop: Shop) -> None:
    """Docs/decisions/0019: one refund requested (its grant waits), one whose answer was lost (Unknown)."""
    for order_id in ("ORD-R1", "ORD-R2"):
        await shop.order(order_id)
        assert (await shop.pay(order_id)).json()["state"] == "Succeeded"
        assert (await shop.http.post(f"/v1/orders/{order_id}/refund", headers=shop.merchant, json={})).status_code == 200
    await shop.faults({"operation": "refund_payment", "action": "drop_response"})
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"


async def _unmatched(webhooks: Webhooks) -> dict[str, Any]:
    """Seed 004: a verified notification no attempt matched (a mistyped reference), stored and escalated."""
    waiting = await webhooks.set_unknown(await webhooks.attempt("ORD-WAIT", amount_minor=7100))
    response = await webhooks.deliver(payment_event(waiting, client_reference="ORD-typo-a1", event_id="evt_lost"))
    assert response.status_code == 204
    return waiting


async def _picture(page: Page, name: str) -> None:
    folder = os.environ.get("PAYGATE_CONSOLE_SCREENSHOTS")
    if folder:
        await page.screenshot(Path(folder) / f"console-{name}.png")


async def _show(page: Page, hash_: str, expected: str) -> str:
    await page.evaluate(f"location.hash = {json.dumps(hash_)}")
    shown: str = await page.wait_for(f"{VIEW}.includes({json.dumps(expected)}) && {VIEW}")
    return shown


async def _click(page: Page, label: str, scope: str = "#view") -> None:
    await page.evaluate(f"[...document.querySelectorAll({json.dumps(scope + ' button')})]"
                        f".find(b => b.textContent === {json.dumps(label)}).click()")


async def _submit(page: Page, field: str, value: str) -> None:
    """Type into the open action form's ``field`` (a CSS selector) and submit it."""
    await page.evaluate(f"{{ const f = document.querySelector('#view form.action-form');"
                        f"f.querySelector({json.dumps(field)}).value = {json.dumps(value)}; f.requestSubmit() }}")


async def test_an_operator_works_every_view_of_the_console_in_one_session(
        gateway_url: str, services: Services, clock: ManualClock, world: World, shop: Shop) -> None:
    attempt_id = await _unknown_attempt_with_escalation(services, clock)
    grant_id = await _payouts(world)
    await _refunds(shop)
    waiting = await _unmatched(Webhooks(http=shop.http, services=services, clock=clock))
    token = await services.tokens.create("operator", "op-1")
    async with browser_page(f"{gateway_url}/console/") as page:
        # Sign-in: a wrong token is refused in words; the operator's is kept in the tab only.
        await page.wait_for("!document.getElementById('sign-in').hidden")
        await _picture(page, "sign-in")
        await page.evaluate("document.getElementById('token').value = 'pgt_wrong';"
                            "document.getElementById('sign-in-form').requestSubmit()")
        assert "Sign-in failed" in await page.wait_for("document.getElementById('sign-in-error').textContent")
        await page.evaluate(f"document.getElementById('token').value = {json.dumps(token)};"
                            "document.getElementById('sign-in-form').requestSubmit(); window.sameDocument = true")
        await page.wait_for("document.getElementById('panel-attempts') !== null")  # the home: the Overview
        await page.evaluate("location.hash = '#escalations'")
        await page.wait_for("document.querySelectorAll('#view tbody tr td.actions button').length > 0")

        # Escalations: hostile text stays text; acknowledging works.
        view = await page.evaluate(VIEW)
        assert f"attempt:{attempt_id}:deadline" in view and HOSTILE in view
        assert await page.evaluate("document.querySelector('#view img') === null && document.title !== 'pwned'")
        await _picture(page, "escalations")
        deadline_row = f"[...document.querySelectorAll('#view tbody tr')].find(tr => tr.innerText.includes('{attempt_id}'))"
        await page.evaluate(f"[...{deadline_row}.querySelectorAll('button')].find(b => b.textContent === 'Acknowledge').click()")
        await page.wait_for(f"{deadline_row}.querySelector('td:nth-child(6)').textContent !== '—'")
        row = await services.db.fetch_one("SELECT acknowledged_at FROM payment_escalations WHERE attempt_id IS NOT NULL")
        assert row is not None and row["acknowledged_at"] is not None

        # Live: a new episode appears without a reload, with a visible "updated at"; Pause holds still.
        before = await page.evaluate("document.getElementById('live-updated').textContent")
        assert before.startswith("updated at")
        await _escalation(services, clock, "live:new-episode")
        await page.wait_for(f"{VIEW}.includes('live:new-episode')", timeout_s=12)
        assert await page.evaluate("window.sameDocument === true")
        assert await page.evaluate("document.getElementById('live-updated').textContent") != before
        await _click(page, "Pause", "#live")
        assert await page.evaluate("document.getElementById('live-state').textContent") == "Paused"
        await _click(page, "Resume", "#live")
        assert await page.wait_for("document.getElementById('live-state').textContent === 'Live'")

        # Checkout attempts and one attempt's history.
        await _show(page, "#attempts", attempt_id)
        await _picture(page, "attempts")
        await page.evaluate(f"document.querySelector('#view a[href=\"#attempt/{attempt_id}\"]').click()")
        await page.wait_for(f"{VIEW}.includes('History (')")
        history = await page.evaluate("[...document.querySelectorAll('#view tbody tr td:nth-child(3)')]"
                                      ".map(td => td.textContent)")
        assert history == ["send_intent", "lookup", "transition"]
        await _picture(page, "attempt")

        # Payouts awaiting a person, with the act and who may give it (seed 000 matrix; API.md Authentication).
        view = await _show(page, "#payouts", "PAY-NEWDST")
        rows = await page.evaluate("[...document.querySelectorAll('#view tbody tr')].map(tr => tr.innerText)")
        big = next(r for r in rows if r.startswith("PAY-BIG"))
        newdst = next(r for r in rows if r.startswith("PAY-NEWDST"))
        assert "approve" in big and "approver-7" in big and "clerk-22" not in big.split("approve")[1]
        assert "20,000.00 EUR" in big
        assert "acknowledge" in newdst and "approver-7" in newdst and "clerk-22" in newdst
        assert "PAY-HOLD" not in view and "dst_tok" not in view
        await _picture(page, "payouts-awaiting")

        # Payouts in Unknown, then one payout with its attempts and history.
        await page.evaluate("[...document.querySelectorAll('nav.tabs a')].find(a => a.textContent === 'Unknown').click()")
        view = await page.wait_for(f"{VIEW}.includes('PAY-LOST-a1') && {VIEW}")
        assert "Unknown" in view and "PAY-BIG" not in view
        await _picture(page, "payouts-unknown")
        await page.evaluate("document.querySelector('#view a[href=\"#payout/PAY-LOST\"]').click()")
        view = await page.wait_for(f"{VIEW}.includes('History (') && {VIEW}")
        assert "provider_observation" in view and "OUTCOME_UNKNOWN" in view and "dst_tok" not in view
        await _picture(page, "payout")

        # The operator's own act on a payout: revoking its unconsumed grant (a finance hold).
        await _show(page, "#payout/PAY-HOLD", "Revoke grant…")
        await _click(page, "Revoke grant…")
        await _submit(page, "textarea", "finance hold: invoice disputed")
        await page.wait_for(f"{VIEW}.includes('finance hold: invoice disputed')")
        grant = await services.db.fetch_one("SELECT state FROM payout_grants WHERE grant_id = %(g)s", {"g": grant_id})
        assert grant == {"state": "Revoked"}

        # Recalls in Unknown.
        view = await _show(page, "#recalls", "PAY-3107-r1")
        assert "Unknown" in view
        await _picture(page, "recalls")

        # Stored unmatched notifications: a refusal shows its problem document; a candidate applies.
        view = await _show(page, "#notifications", "ORD-typo-a1")
        assert "evt_lost" in view and "unmatched" in view
        await _click(page, "Apply to attempt…")
        await page.wait_for("document.querySelector('#view form.action-form button.link') !== null")
        await _picture(page, "notifications")
        await _submit(page, "input", str(uuid.uuid4()))
        refusal = await page.wait_for("document.querySelector('#view .problem') && "
                                      "document.querySelector('#view .problem').innerText")
        assert "404" in refusal and "attempt.not_found" in refusal
        await page.evaluate("document.querySelector('#view form.action-form button.link').click()")
        await page.evaluate("document.querySelector('#view form.action-form').requestSubmit()")
        notice = await page.wait_for("document.querySelector('#view .notice') && "
                                     "document.querySelector('#view .notice').innerText")
        assert str(waiting["attempt_id"]) in notice and "Succeeded" in notice
        assert (await webhooks_state(services, waiting["attempt_id"])) == "Succeeded"
        assert "evt_lost" not in await page.evaluate(VIEW)

        # Refunds, then one order's refunds with their history.
        view = await _show(page, "#refunds", "ORD-R2")
        assert "Requested" in view and "Unknown" in view and "ORD-R2-r1" in view
        await _picture(page, "refunds")
        await page.evaluate("document.querySelector('#view a[href=\"#refund/ORD-R2\"]').click()")
        view = await page.wait_for(f"{VIEW}.includes('History (') && {VIEW}")
        assert "merchant-request" in view and "pm_card" not in view
        await _picture(page, "refund")

        await _show(page, "#outbox", "operator-alert")
        await _picture(page, "outbox")
        await _show(page, "#health", "Payment attempts by state")
        assert 'state="Unknown"' in await page.evaluate(VIEW)
        await _picture(page, "health")

        # A list longer than a page: the console follows the Link header's rel="next",
        # newest first, and the live view holds still while the operator pages.
        for number in range(55):
            await _escalation(services, clock, f"paging:{number:02d}")
        await _show(page, "#escalations", "more exist")
        first = await page.evaluate("document.querySelector('#view tbody tr td:nth-child(3)').textContent")
        assert first == "paging:54"
        await _click(page, "Load more")
        await page.wait_for(f"{VIEW}.includes('paging:00') && !{VIEW}.includes('more exist')")
        open_episodes = await services.db.fetch_all("SELECT 1 FROM payment_escalations WHERE resolved_at IS NULL")
        assert await page.evaluate("document.querySelectorAll('#view tbody tr').length") == len(open_episodes) > 50
        assert await page.evaluate("document.getElementById('live-state').textContent") == "Holding: paging"

        await page.evaluate("document.getElementById('sign-out').click()")
        await page.wait_for("!document.getElementById('sign-in').hidden")
        assert await page.evaluate("sessionStorage.length") == 0


async def webhooks_state(services: Services, attempt_id: Any) -> str:
    row = await services.db.fetch_one("SELECT state FROM payment_attempts WHERE attempt_id = %(a)s", {"a": attempt_id})
    return str(row["state"]) if row else "missing"
