"""The operator console in a real (headless) browser against a real gateway server (API.md
"Operations": "A browser console under /console/ for operators (sign-in with an operator token)").

Skipped where Chromium is not installed (CI installs only what .ci/run installs); on a machine
with ``apt-get install chromium`` it signs in, works an escalation, drills into an Unknown attempt
and proves that hostile text in the data stays text. ``PAYGATE_CONSOLE_SCREENSHOTS=DIR`` keeps a
picture of each view for a person to look at.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.domain.attempts import Evidence
from gateway.escalations.store import raise_escalation
from gateway.local.servers import free_port
from gateway.services import Services
from gateway.settings import Settings
from tests.conftest import TEST_ACCOUNT
from tests.e2e.browser import CHROMIUM, Page, browser_page

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                  "(apt-get install chromium to run the console in a browser)")]
HOSTILE = "<img src=x onerror=document.title='pwned'>"


@pytest.fixture
def gateway_url(settings: Settings) -> Iterator[str]:
    """The real app on a real port, in a thread with its own event loop and services."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning",
                                           ws="none", lifespan="on"))
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


async def _picture(page: Page, name: str) -> None:
    folder = os.environ.get("PAYGATE_CONSOLE_SCREENSHOTS")
    if folder:
        await page.screenshot(Path(folder) / f"console-{name}.png")


async def test_an_operator_signs_in_works_an_escalation_and_reads_an_attempts_history(
        gateway_url: str, services: Services, clock: ManualClock) -> None:
    attempt_id = await _unknown_attempt_with_escalation(services, clock)
    token = await services.tokens.create("operator", "op-1")
    async with browser_page(f"{gateway_url}/console/") as page:
        await page.wait_for("!document.getElementById('sign-in').hidden")
        await _picture(page, "sign-in")
        await page.evaluate("document.getElementById('token').value = 'pgt_wrong';"
                            "document.getElementById('sign-in-form').requestSubmit()")
        assert "Sign-in failed" in await page.wait_for("document.getElementById('sign-in-error').textContent")
        await page.evaluate(f"document.getElementById('token').value = {json.dumps(token)};"
                            "document.getElementById('sign-in-form').requestSubmit()")
        await page.wait_for("document.querySelectorAll('#view tbody tr td.actions button').length > 0")
        view = await page.evaluate("document.getElementById('view').innerText")
        assert f"attempt:{attempt_id}:deadline" in view and HOSTILE in view
        assert await page.evaluate("document.querySelector('#view img') === null && document.title !== 'pwned'")
        await _picture(page, "escalations")

        await page.evaluate("[...document.querySelectorAll('#view button')]"
                            ".find(b => b.textContent === 'Acknowledge').click()")
        await page.wait_for("document.querySelector('#view tbody tr td:nth-child(6)').textContent !== '—'")
        row = await services.db.fetch_one("SELECT acknowledged_at FROM payment_escalations")
        assert row is not None and row["acknowledged_at"] is not None

        await page.evaluate("location.hash = '#attempts'")
        await page.wait_for(f"document.getElementById('view').innerText.includes({json.dumps(attempt_id)})")
        await _picture(page, "attempts")
        await page.evaluate(f"document.querySelector('#view a[href=\"#attempt/{attempt_id}\"]').click()")
        await page.wait_for("document.getElementById('view').innerText.includes('History (')")
        history = await page.evaluate("[...document.querySelectorAll('#view tbody tr td:nth-child(3)')]"
                                      ".map(td => td.textContent)")
        assert history == ["send_intent", "lookup", "transition"]
        await _picture(page, "attempt")

        await page.evaluate("location.hash = '#outbox'")
        await page.wait_for("document.getElementById('view').innerText.includes('operator-alert')")
        await _picture(page, "outbox")

        await page.evaluate("location.hash = '#health'")
        await page.wait_for("document.getElementById('view').innerText.includes('Payment attempts by state')")
        assert 'state="Unknown"' in await page.evaluate("document.getElementById('view').innerText")
        await _picture(page, "health")

        await page.evaluate("document.getElementById('sign-out').click()")
        await page.wait_for("!document.getElementById('sign-in').hidden")
        assert await page.evaluate("sessionStorage.length") == 0
