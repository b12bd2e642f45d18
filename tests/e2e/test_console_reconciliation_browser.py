"""The console's Reconciliation view in a real (headless) browser against a real gateway server
(docs/decisions/0071; API.md "Operations": a console for operators): the runs list with each run's
counts, one run's findings (an orphan made at the provider, a disagreement), and a run started from
the console's form, which the API records Running for a worker. Skipped where Chromium is not
installed; ``PAYGATE_CONSOLE_SCREENSHOTS=DIR`` keeps a picture of each view (docs/console.md)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gateway.clock import ManualClock
from gateway.domain.timestamps import rfc3339
from gateway.reconciliation.runs import Runs
from tests.e2e.browser import CHROMIUM, browser_page
from tests.e2e.test_console_browser import VIEW, _click, _picture, _show, gateway_url
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.reconciliation.conftest import Provider, window

__all__ = ["gateway_url", "shop"]
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                  "(apt-get install chromium to run the console in a browser)")]


async def test_an_operator_sees_runs_and_their_findings_and_starts_a_run(
        gateway_url: str, shop: Shop, clock: ManualClock) -> None:
    services = shop.services
    runs = Runs(services.db, clock, services.settings, services.http)
    provider = Provider(shop)
    start = clock.now()
    orphan = await provider.payment("NOT-OURS-C", amount_minor=777)
    await shop.order("ORD-C1")
    assert (await shop.pay("ORD-C1")).json()["state"] == "Succeeded"
    [paid] = await shop.attempts("ORD-C1")
    await provider.control(f"/objects/{paid['provider_payment_id']}/amend", {"amount_minor": 1})
    clock.advance(120)
    run = await runs.start(shop.account, *window(start, clock.now()), "op-1")
    assert await runs.execute(run["run_id"]) == "finished"
    token = await services.tokens.create("operator", "op-1")
    async with browser_page(f"{gateway_url}/console/") as page:
        await page.wait_for("!document.getElementById('sign-in').hidden")
        await page.evaluate(f"document.getElementById('token').value = {json.dumps(token)};"
                            "document.getElementById('sign-in-form').requestSubmit()")
        await page.wait_for("document.getElementById('panel-attempts') !== null")
        listed = await _show(page, "#reconciliation", str(run["run_id"]))
        assert "Finished" in listed and "orphan 1" in listed and "disagreement 1" in listed
        await _picture(page, "reconciliation")
        await page.evaluate(f"document.querySelector('#view a[href=\"#reconciliation-run/{run['run_id']}\"]').click()")
        detail = await page.wait_for(f"{VIEW}.includes('Findings (') && {VIEW}")
        assert orphan in detail and paid["provider_payment_id"] in detail and "NOT-OURS-C" in detail
        classes = await page.evaluate("[...document.querySelectorAll('#view tbody tr td:first-child')]"
                                      ".map(td => td.textContent)")
        assert sorted(classes) == ["disagreement", "orphan"]
        await _picture(page, "reconciliation-run")

        await _show(page, "#reconciliation", str(run["run_id"]))
        await _click(page, "Start a run…")
        await page.wait_for("document.querySelector('#view form.action-form') !== null")
        begin, end = rfc3339(clock.now() - timedelta(hours=2)), rfc3339(clock.now())
        await page.evaluate(
            "{ const f = document.querySelector('#view form.action-form');"
            f"f.querySelector('[name=provider_account]').value = {json.dumps(shop.account)};"
            f"f.querySelector('[name=from]').value = {json.dumps(begin)};"
            f"f.querySelector('[name=to]').value = {json.dumps(end)}; f.requestSubmit() }}")
        await page.wait_for(f"{VIEW}.includes('Running')")
    rows = await services.db.fetch_all("SELECT state, started_by FROM reconciliation_runs WHERE run_id <> %(r)s",
                                       {"r": run["run_id"]})
    assert [(r["state"], r["started_by"]) for r in rows] == [("Running", "op-1")]
