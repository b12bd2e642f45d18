"""The Grafana dashboard ("a Grafana dashboard (docs/grafana/paygate.json) over
the Prometheus metrics the gateway already exports, with the same panels as the Overview plus
per-process rates, and the alert rules linked from it; a test checks that every metric a panel
queries exists in /metrics").

Every PromQL expression of every panel is read for its metric names (the reader the alert rules'
test uses) and each must be a sample name of a real scrape taken after real traffic: a checkout
paid and a payout whose answer CardCo lost, reconciled (so the provider-call histograms, the
reconciler's counters and the HTTP histograms all have samples). The dashboard names every alert
of docs/alerts.rules.yml with its runbook, and carries a panel for each of the Overview's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.checkout.conftest import Shop, shop
from tests.integration.metrics_support import scrape
from tests.integration.payouts.conftest import World
from tests.integration.payouts.test_alert_rules import _exposed, _rules, metric_names

__all__ = ["shop"]

DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "paygate.json"
# The Overview's panels (gateway/console/views-overview.js), each by the metric its Grafana twin reads.
OVERVIEW = {"paygate_payment_attempts", "paygate_payment_unknown_attempt_age_seconds_bucket",
            "paygate_escalations_open", "paygate_outbox_dead_letters", "paygate_provider_call_seconds_bucket",
            "paygate_provider_call_seconds_count", "paygate_provider_lookup_tokens", "paygate_provider_paused",
            "paygate_payouts"}


def _panels() -> list[dict[str, Any]]:
    document = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert document["uid"] == "paygate-overview" and document["panels"]
    return [panel for panel in document["panels"] if panel["type"] != "row"]


def _expressions() -> list[str]:
    return [target["expr"] for panel in _panels() for target in panel.get("targets", ())]


def test_the_dashboard_has_the_overviews_panels_per_process_rates_and_the_alert_rules() -> None:
    named = set().union(*(metric_names(expr) for expr in _expressions()))
    assert OVERVIEW <= named
    assert any("by (instance)" in expr for expr in _expressions()), "per-process rates"
    text = json.dumps(json.loads(DASHBOARD.read_text(encoding="utf-8")))
    for rule in _rules():
        assert f"[{rule['alert']}]" in text and f"observability.md#{rule['alert'].lower()}" in text, rule["alert"]
    assert "alerts.rules.yml" in text


async def test_every_metric_a_panel_queries_is_in_a_real_scrape(world: World, shop: Shop) -> None:
    await shop.order("ORD-GRAFANA")
    assert (await shop.pay("ORD-GRAFANA")).json()["state"] == "Succeeded"
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    await world.run(await world.approved())
    world.clock.advance(60)
    await world.reconcile()
    seen = await scrape(world.http)
    named = set().union(*(metric_names(expr) for expr in _expressions()))
    assert len(named) >= 15
    assert {name for name in named if not _exposed(seen, name)} == set()
    assert all(name.startswith("paygate_") for name in named)
    assert seen.value("paygate_payouts", state="Unknown") + seen.value("paygate_payouts", state="Paid") == 1
    assert seen.series("paygate_provider_lookup_tokens") and seen.series("paygate_provider_paused")
