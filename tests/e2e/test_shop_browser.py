"""The reference checkout page (``/demo/shop``, paygate_local.shop) in headless Chromium against a
real ``paygate up --rehearsal``: a customer pays through it on CardCo and on the Stripe demo
account, with a card that pays, a 3-D Secure card whose challenge they complete, and one whose
challenge they close (abandoned: the action expires and the page says Failed only once the gateway
says so). Seed 004: a payment is shown Paid or Failed only from a final state; anything else is
"still confirming", never a failure. The page never holds a token: its backend does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.browser import CHROMIUM, Page, browser_page
from tests.e2e.test_paygate_up import STOP_TIMEOUT_S, _start_up, _wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")]
RESULT = "document.getElementById('result')"
# Long enough for the page to see the challenge and the customer to close it; short for the test.
ABANDON_EXPIRES_IN_S = 4


async def _pay(page: Page, account: str, card: str, *, challenge: str | None = None) -> dict[str, Any]:
    """Choose ``account`` and ``card``, press Pay, answer the challenge if one comes ("confirm" or
    "close"), and wait for a final outcome; the outcome, the text shown, the order id and every
    outcome the page showed on the way (``seen``)."""
    await page.wait_for("document.body.dataset.ready === 'yes'")
    await page.evaluate("window.watcher?.disconnect(); window.seen = [];"
                        f"window.watcher = new MutationObserver(() => window.seen.push({RESULT}.dataset.outcome));"
                        f"window.watcher.observe({RESULT}, {{attributeFilter: ['data-outcome']}})")
    await page.evaluate(f"document.getElementById('account').value = {json.dumps(account)};"
                        "document.getElementById('account').onchange();"
                        f"document.getElementById('card').value = {json.dumps(card)};"
                        "document.getElementById('pay').click()")
    if challenge is not None:
        await page.wait_for("document.getElementById('challenge').open", timeout_s=30)
        assert await page.evaluate(f"{RESULT}.dataset.outcome") == "challenge"
        await page.evaluate(f"document.getElementById({json.dumps(challenge)}).click()")
    outcomes: dict[str, Any] = await page.wait_for(
        f"['paid', 'failed'].includes({RESULT}.dataset.outcome) && "
        f"{{outcome: {RESULT}.dataset.outcome, text: {RESULT}.textContent, order: {RESULT}.dataset.orderId, "
        "seen: window.seen}", timeout_s=90)
    return outcomes


def _order(demo: dict[str, Any], order_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{demo['gateway_url']}/v1/orders/{order_id}",
                       headers={"Authorization": f"Bearer {demo['tokens']['merchant']}"})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def _faults(demo: dict[str, Any], *rules: dict[str, Any]) -> None:
    """The fake answers under ``rules`` from now on (API.md, CardCo control API)."""
    assert httpx.post(f"{demo['control_url']}/faults", json={"rules": list(rules)}).status_code == 200


@pytest.mark.parametrize(("account", "cards"), [
    ("cardco:acct_store:test", {"plain": "pm_card_visa", "3ds": "pm_card_3ds"}),
    ("stripe:acct_store:test", {"plain": "pm_card_visa", "3ds": "pm_card_threeDSecureRequired"}),
])
async def test_a_customer_pays_through_the_shop_page(work_dir: Path, account: str, cards: dict[str, str]) -> None:
    log = (work_dir / "up.log").open("wb")
    process, _, _ = _start_up(work_dir, log)
    try:
        demo: dict[str, Any] = _wait_for(work_dir / "data" / "paygate-demo.json", process)
        async with browser_page(demo["shop_url"]) as page:
            html = await page.evaluate("document.documentElement.outerHTML")
            assert not any(token in html for token in demo["tokens"].values())

            paid = await _pay(page, account, cards["plain"])
            assert paid["outcome"] == "paid", paid
            assert _order(demo, paid["order"])["state"] == "Paid"
            # Coming back to the page from the bank's (the return_url, ?order=ID) shows the order's outcome.
            await page.send("Page.navigate", url=f"{demo['shop_url']}?order={paid['order']}")
            await page.wait_for(f"location.search === {json.dumps('?order=' + paid['order'])} && "
                                "document.getElementById('result')?.dataset.outcome === 'paid'", timeout_s=30)

            # The order names the page as its return_url: Stripe answers redirect_to_url, as CardCo does.
            completed = await _pay(page, account, cards["3ds"], challenge="confirm")
            assert completed["outcome"] == "paid", completed
            order = _order(demo, completed["order"])
            assert order["state"] == "Paid" and order["return_url"] == f"{demo['shop_url']}?order={completed['order']}"

            # Abandoned: the customer closes the challenge; it expires after ABANDON_EXPIRES_IN_S (else 600 s).
            _faults(demo, {"operation": "create_payment", "action": "requires_action",
                          "expires_in_s": ABANDON_EXPIRES_IN_S})
            abandoned = await _pay(page, account, cards["3ds"], challenge="close")
            assert abandoned["outcome"] == "failed" and "not charged" in abandoned["text"], abandoned
            assert abandoned["seen"].count("failed") == 1, abandoned
            assert _order(demo, abandoned["order"])["state"] == "Open"

            # The create's answer is lost and the webhook late: the attempt is Unknown until the
            # webhook (or a lookup) settles it. The page says it is still confirming, never Failed, then Paid.
            _faults(demo, {"operation": "create_payment", "action": "drop_response"},
                    {"operation": "webhook", "action": "delay_ms", "delay_ms": 8000})
            unknown = await _pay(page, account, cards["plain"])
            assert unknown["outcome"] == "paid" and "confirming" in unknown["seen"], unknown
            assert "failed" not in unknown["seen"], unknown
            assert _order(demo, unknown["order"])["state"] == "Paid"
            if (shots := os.environ.get("PAYGATE_SHOP_SCREENSHOTS")):
                await page.screenshot(Path(shots) / f"shop-{account.split(':')[0]}.png")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
