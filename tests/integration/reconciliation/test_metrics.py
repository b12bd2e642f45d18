"""The reconciliation families in a real scrape (docs/observability.md; docs/decisions/0071): runs,
findings by class, objects read by kind, and the age of each account's last finished run, which
the PaygateReconciliationRunOverdue rule reads: quiet after a run, firing two intervals later."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gateway.clock import ManualClock
from gateway.reconciliation.runs import Runs
from tests.integration.checkout.conftest import Shop
from tests.integration.metrics_support import Scrape, scrape
from tests.integration.payouts.test_alert_rules import RULES, _rules, _series, metric_names
from tests.integration.reconciliation.conftest import Provider, window

pytestmark = pytest.mark.parametrize("provider", ["cardco"])


async def _a_run_then_two_intervals(shop: Shop, runs: Runs, provider_api: Provider,
                                    clock: ManualClock) -> tuple[Scrape, Scrape]:
    """One run that finds an orphan, scraped at once and again two intervals and an hour later."""
    start = clock.now()
    await provider_api.payment("NOT-OURS-M")
    clock.advance(120)
    run = await runs.start(shop.account, *window(start, clock.now()), "test")
    assert await runs.execute(run["run_id"]) == "finished"
    fresh = await scrape(shop.http)
    clock.advance(2 * shop.services.settings.reconciliation_interval_s + 3600)
    return fresh, await scrape(shop.http)


async def test_a_run_is_counted_and_its_age_grows_with_the_clock(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock) -> None:
    fresh, stale = await _a_run_then_two_intervals(shop, runs, provider_api, clock)
    values = fresh.values
    assert values[("paygate_reconciliation_runs_total", frozenset({("outcome", "finished")}))] == 1
    assert values[("paygate_reconciliation_findings_total", frozenset({("class", "orphan")}))] == 1
    assert values[("paygate_reconciliation_objects_read_total", frozenset({("kind", "payment")}))] == 1
    age = ("paygate_reconciliation_last_finished_age_seconds", frozenset({("account", shop.account)}))
    assert values[age] == 0
    interval = shop.services.settings.reconciliation_interval_s
    assert values[("paygate_reconciliation_interval_seconds", frozenset())] == interval
    assert stale.values[age] == 2 * interval + 3600


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian package prometheus; .ci/run installs it)")
async def test_the_overdue_alert_is_quiet_after_a_run_and_fires_two_intervals_later(
        shop: Shop, runs: Runs, provider_api: Provider, clock: ManualClock, tmp_path: Path) -> None:
    fresh, stale = await _a_run_then_two_intervals(shop, runs, provider_api, clock)
    [rule] = [r for r in _rules() if r["alert"] == "PaygateReconciliationRunOverdue"]
    mine = [series for series in _series(fresh, stale, metric_names(rule["expr"]), samples=30)
            if "account" not in series["series"] or shop.account in series["series"]]
    annotations = rule["annotations"] | {"summary": f"No reconciliation run of {shop.account} has finished for "
                                                     "2d 1h 0m 0s"}
    unit = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": mine,
        "alert_rule_test": [
            {"eval_time": "25m", "alertname": rule["alert"], "exp_alerts": []},
            {"eval_time": "55m", "alertname": rule["alert"], "exp_alerts": [
                {"exp_labels": {"severity": "ticket", "account": shop.account}, "exp_annotations": annotations}]}]}]}
    path = tmp_path / "overdue.tests.yml"
    path.write_text(yaml.safe_dump(unit), encoding="utf-8")
    checked = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
