"""The console's Overview in a real (headless) browser ("the Overview
renders with data made by the real pipeline (a success, a decline, an Unknown, an escalation, a
dead letter), its numbers equal the API's, and it stays usable at a narrow window width").

The data (tests/integration/overview_support.py): CardCo in-process answers one payment, declines
one and loses the answer of a third (seed 004: an unanswered call is Unknown, never failed); the
merchant's sink refuses the paid order's confirmation until the outbox dead-letters it, which
raises an escalation (seed 004, "Downstream Work"). The gateway is a real server on the test's clock. Skipped where Chromium is not
installed. ``PAYGATE_CONSOLE_SCREENSHOTS=DIR`` keeps the pictures (docs/console/console-overview*.png).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.services import Services
from tests.e2e.browser import CHROMIUM, Page, browser_page
from tests.e2e.test_console_browser import VIEW, _picture, gateway_url
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.outbox_support import World, receiver, settings, sinks, world
from tests.integration.overview_support import success_decline_unknown_dead_letter

__all__ = ["gateway_url", "receiver", "settings", "shop", "sinks", "world"]
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                  "(apt-get install chromium to run the console in a browser)")]
NARROW = 390  # a phone's CSS width


async def _api(page: Page, path: str) -> Any:
    """What the API answers the signed-in tab, read in the page with the tab's own token."""
    return await page.evaluate(
        f"fetch({json.dumps(path)}, {{headers: {{Authorization: 'Bearer ' + "
        "sessionStorage.getItem('paygate.operatorToken')}}).then(r => r.json())")


async def _stat(page: Page, name: str) -> str:
    value: str = await page.evaluate(f"document.querySelector('#stat-{name} .big').textContent")
    return value


async def test_the_overview_shows_the_apis_numbers_as_charts_that_link_to_their_lists_at_any_width(
        gateway_url: str, services: Services, clock: ManualClock, shop: Shop, world: World) -> None:
    await success_decline_unknown_dead_letter(shop, world)
    world.clock.advance(30)
    token = await services.tokens.create("operator", "op-1")
    async with browser_page(f"{gateway_url}/console/") as page:
        await page.wait_for("!document.getElementById('sign-in').hidden")
        await page.evaluate(f"document.getElementById('token').value = {json.dumps(token)};"
                            "document.getElementById('sign-in-form').requestSubmit()")
        # The home is the Overview: its charts are drawn (five series of 60 minutes, bars with values).
        await page.wait_for("document.querySelectorAll('#panel-attempts svg polyline').length === 5")
        assert await page.evaluate("location.hash") == "#overview"
        assert await page.evaluate("document.querySelector('nav a.active').textContent") == "Overview"
        points = await page.evaluate("document.querySelector('#panel-attempts polyline').getAttribute('points')")
        assert len(points.split()) == 60

        # Its numbers are the API's.
        api = await _api(page, "/v1/ops/overview")
        hour = api["attempts_last_hour"]
        assert (hour["started"], hour["succeeded"], hour["failed"], hour["unknown"]) == (3, 1, 1, 1)
        assert await _stat(page, "settled") == f"{hour['succeeded'] + hour['failed'] + hour['not_applied']} of 3 started"
        assert await _stat(page, "unknown") == str(sum(u["unknown"] for u in api["unknown_attempts"])) == "1"
        assert await _stat(page, "escalations") == str(sum(e["open"] for e in api["escalations"])) == "1"
        assert await _stat(page, "dead-letters") == str(api["outbox"]["dead_letters"]) == "1"
        assert await _stat(page, "paused") == "0"
        view = await page.evaluate(VIEW)
        assert "Started 3 · Succeeded 1 · Failed 1 · NotApplied 0 · Unknown 1" in view
        assert "outbox-dead-lettered" in view
        bars = await page.evaluate("[...document.querySelectorAll('#panel-escalations svg text.value')]"
                                   ".map(t => t.textContent)")
        assert bars == [str(e["open"]) for e in api["escalations"]]
        providers = await page.evaluate("[...document.querySelectorAll('#panel-providers tbody tr')]"
                                        ".map(tr => [...tr.children].map(td => td.textContent))")
        assert [row[:2] for row in providers] == [[p["account"], str(p["calls"])] for p in api["providers"]]
        await _picture(page, "overview")

        # Each chart links to the list behind it; the attempts list opens on every recent attempt.
        await page.evaluate("document.querySelector('#panel-attempts h3 a').click()")
        view = await page.wait_for(f"{VIEW}.includes('ORD-OK-a1') && {VIEW}")
        assert await page.evaluate("location.hash") == "#attempts?state=all"
        assert "ORD-NO-a1" in view and "ORD-LOST-a1" in view and "Nothing here." not in view
        assert await page.evaluate("document.querySelector('#view select').value") == "all"
        await page.evaluate("location.hash = '#overview'")
        await page.wait_for("document.getElementById('panel-outbox') !== null")
        await page.evaluate("document.querySelector('#stat-dead-letters').click()")
        await page.wait_for(f"{VIEW}.includes('sink answered HTTP 500')")

        # A phone-width window: nothing wider than the window, every panel and the nav still there.
        await page.send("Emulation.setDeviceMetricsOverride", width=NARROW, height=844, deviceScaleFactor=1,
                        mobile=True)
        await page.evaluate("location.hash = '#overview'")
        await page.wait_for("document.querySelectorAll('#panel-attempts svg polyline').length === 5")
        assert await page.evaluate("window.innerWidth") == NARROW
        assert await page.evaluate("document.documentElement.scrollWidth") <= NARROW
        widest = await page.evaluate("Math.max(...[...document.querySelectorAll('.panel, .card, header')]"
                                     ".map(e => e.getBoundingClientRect().right))")
        assert widest <= NARROW
        assert await page.evaluate("document.querySelectorAll('.panel').length") == 6
        assert await _stat(page, "unknown") == "1"
        await _picture(page, "overview-narrow")
