"""The operator's Overview (``GET /v1/ops/overview``; "attempts started and settled
per minute by outcome over the last hour, open escalations by reason, outbox backlog and dead
letters, provider call latency (p50, p99) and error rate per account, lookup tokens and paused
accounts, payouts by state, and the age of the oldest Unknown attempt ... fed by one read-model
endpoint"), over data the real pipeline made: CardCo in-process answers a payment, declines one
and loses the answer of a third (seed 004: "a timeout is Unknown"); a confirmation the merchant's
sink refuses is dead-lettered and escalated (seed 004, "Downstream Work"). Its numbers are the
same as /metrics' (tests/integration/overview_support.py). Each statement reads an index, not the history (EXPLAIN on a few thousand rows).

On CardCo's account alone: the read model reads rows no adapter shapes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gateway import instruments
from gateway.services import Services
from gateway.store.queries import load_queries
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop, shop
from tests.integration.conftest import cardco_only as provider  # noqa: F401  (CardCo alone: see above)
from tests.integration.metrics_support import scrape
from tests.integration.notifications.conftest import operator
from tests.integration.outbox_support import World, receiver, settings, sinks, world
from tests.integration.overview_support import success_decline_unknown_dead_letter

__all__ = ["operator", "receiver", "settings", "shop", "sinks", "world"]


async def _overview(shop: Shop, operator: dict[str, str]) -> dict[str, Any]:
    response = await shop.http.get("/v1/ops/overview", headers=operator)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def test_the_overview_counts_what_the_pipeline_did_as_metrics_does(
        shop: Shop, world: World, operator: dict[str, str]) -> None:
    instruments.take()  # what earlier tests of this process counted and never flushed
    started = shop.services.clock.now()
    await success_decline_unknown_dead_letter(shop, world)
    world.clock.advance(90)

    seen = await _overview(shop, operator)
    assert seen["attempts_last_hour"] == {"started": 3, "succeeded": 1, "failed": 1, "not_applied": 0, "unknown": 1}
    minutes = seen["attempts_per_minute"]
    assert len(minutes) == seen["window_minutes"] == 60
    busy = [(m["started"], m["succeeded"], m["failed"], m["unknown"]) for m in minutes if m["started"]]
    assert busy == [(1, 1, 0, 0), (2, 0, 1, 1)]
    payment = next(u for u in seen["unknown_attempts"] if u["kind"] == "payment")
    assert payment["unknown"] == 1 and payment["oldest_age_s"] == pytest.approx(
        (shop.services.clock.now() - started - timedelta(seconds=60)).total_seconds(), abs=30)
    assert [(e["reason"], e["open"]) for e in seen["escalations"]] == [("outbox-dead-lettered", 1)]
    assert seen["outbox"]["dead_letters"] == 1
    providers = {p["account"]: p for p in seen["providers"]}
    assert set(providers) == {TEST_ACCOUNT, LIVE_ACCOUNT}
    test_account = providers[TEST_ACCOUNT]
    assert test_account["calls"] >= 3 and test_account["errors"] >= 1 and test_account["p50_s"] is not None
    assert providers[LIVE_ACCOUNT]["calls"] == 0 and providers[LIVE_ACCOUNT]["p99_s"] is None
    assert test_account["paused_until"] is None and test_account["lookup_tokens"] <= test_account["lookup_burst"]
    assert seen["payouts_by_state"] == {}

    metrics = await scrape(shop.http)
    assert metrics.total("paygate_provider_call_seconds_count", account=TEST_ACCOUNT) == test_account["calls"]
    assert sum(metrics.total("paygate_provider_call_seconds_count", account=TEST_ACCOUNT, outcome=outcome)
               for outcome in ("rate_limited", "server_error", "timeout", "transport", "error")) \
        == test_account["errors"] == 1  # the lost answer; the decline was an answer
    assert metrics.total("paygate_outbox_dead_letters") == seen["outbox"]["dead_letters"]
    assert metrics.value("paygate_escalations_open", reason="outbox-dead-lettered") == 1
    assert metrics.value("paygate_payment_attempts", state="Unknown") == payment["unknown"]


async def test_only_operators_read_the_overview(shop: Shop, services: Services) -> None:
    """API.md: "All operator endpoints need role operator"."""
    assert (await shop.http.get("/v1/ops/overview")).json()["code"] == "auth.missing"
    denied = await shop.http.get("/v1/ops/overview", headers=shop.merchant)
    assert (denied.status_code, denied.json()["code"]) == (403, "auth.forbidden")


async def test_the_overview_reads_indexes_not_the_history(shop: Shop, services: Services) -> None:
    """Refreshed every 5 s by every open console: with two days of history (4,000 events) the
    last hour's events come from payment_attempt_events_recent, never a scan of the table."""
    now = services.clock.now()
    async with services.db.transaction() as conn:
        await conn.execute(
            "INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)"
            " SELECT NULL, %(now)s - make_interval(mins => n),"
            " CASE WHEN n %% 2 = 0 THEN 'transition' ELSE 'lookup' END, 'recovery-1', '{\"to\": \"Succeeded\"}'"
            " FROM generate_series(61, 4060) AS n", {"now": now})
        await conn.execute("ANALYZE payment_attempt_events")
    sql = load_queries("gateway.store", "overview.sql")
    plan = await services.db.fetch_one("EXPLAIN (FORMAT JSON) " + sql["attempts_per_minute"].rstrip().rstrip(";"),
                                       {"since": now - timedelta(hours=1), "now": now})
    assert plan is not None
    text = str(plan)
    assert "payment_attempt_events_recent" in text and "Seq Scan" not in text, text
