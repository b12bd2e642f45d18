"""The operator's interface to provider-side reconciliation runs (docs/decisions/0071): start one
(202, executed by a worker, never by the web request), read it with its counts and findings, list
runs paged like every list (docs/decisions/0036), and stable problem codes for bad input; and the
clock's schedule, one run per account per ``reconciliation_interval_s``, on the injected clock."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import dramatiq
import httpx
import pytest

from gateway.clock import ManualClock
from gateway.domain.timestamps import rfc3339
from gateway.reconciliation.runs import Runs
from tests.integration.checkout.conftest import Shop
from tests.integration.reconciliation.conftest import Provider
from tests.integration.test_jobs import run_worker_until_idle

pytestmark = pytest.mark.parametrize("provider", ["cardco"])  # the runs themselves: test_runs.py, both dialects


@pytest.fixture
async def operator(shop: Shop) -> dict[str, str]:
    return {"Authorization": f"Bearer {await shop.services.tokens.create('operator', 'op-1')}"}


def listing_reads(shop: Shop) -> list[str]:
    return [r["path"] for r in shop.cardco.store.requests if r["method"] == "GET" and "created_gte" in r["path"]]


async def start(shop: Shop, operator: dict[str, str], **body: Any) -> httpx.Response:
    return await shop.http.post("/v1/ops/reconciliation/runs", headers=operator, json=body)


async def test_an_operator_starts_a_run_that_a_worker_executes(
        shop: Shop, operator: dict[str, str], provider_api: Provider, clock: ManualClock,
        jobs_runtime: dramatiq.Broker) -> None:
    begin = clock.now() - timedelta(minutes=1)
    orphan = await provider_api.payment("NOT-OURS-9")
    clock.advance(120)
    response = await start(shop, operator, provider_account=shop.account, **{"from": rfc3339(begin)},
                           to=rfc3339(clock.now()))
    assert response.status_code == 202, response.text
    run = response.json()
    assert (run["state"], run["provider_account"], run["counts"]) == (
        "Running", shop.account, {"matched": 0, "evidence": 0, "orphan": 0, "disagreement": 0, "missing": 0})
    assert response.headers["location"] == f"/v1/ops/reconciliation/runs/{run['run_id']}"
    assert listing_reads(shop) == [], "the web request reads nothing from the provider"
    from jobs.reconciliation import reconcile_providers

    reconcile_providers.send()
    await asyncio.to_thread(run_worker_until_idle, jobs_runtime)
    done = (await shop.http.get(f"/v1/ops/reconciliation/runs/{run['run_id']}", headers=operator)).json()
    assert (done["state"], done["counts"]["orphan"], done["from"], done["to"]) == (
        "Finished", 1, run["from"], run["to"])
    assert [(f["class"], f["provider_object_id"]) for f in done["findings"]] == [("orphan", orphan)]
    mine = [path for path in listing_reads(shop) if quote(run["from"]) in path]
    assert len(mine) == 4, mine  # payments, refunds, payouts, recalls: one page each (the clock's own runs aside)


async def test_runs_are_listed_newest_first_with_link_paging(
        shop: Shop, operator: dict[str, str], clock: ManualClock) -> None:
    made = []
    for _ in range(3):
        response = await start(shop, operator, provider_account=shop.account,
                               **{"from": rfc3339(clock.now() - timedelta(hours=1))}, to=rfc3339(clock.now()))
        made.append(response.json()["run_id"])
        clock.advance(1)
    first = await shop.http.get("/v1/ops/reconciliation/runs?order=desc&limit=2", headers=operator)
    assert [r["run_id"] for r in first.json()] == made[:0:-1]
    link = first.headers["link"].split(">")[0].lstrip("<")
    rest = await shop.http.get(link, headers=operator)
    assert [r["run_id"] for r in rest.json()] == [made[0]] and "link" not in rest.headers
    running = await shop.http.get("/v1/ops/reconciliation/runs?state=Finished", headers=operator)
    assert running.json() == []


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"provider_account": "cardco:nobody:test", "from": "2026-11-29T15:00:00Z", "to": "2026-11-29T16:00:00Z"},
     422, "reconciliation.account_unknown"),
    ({"provider_account": "cardco:acct_store:test", "from": "2026-11-29T16:00:00Z", "to": "2026-11-29T15:00:00Z"},
     422, "reconciliation.window_invalid"),
    ({"provider_account": "cardco:acct_store:test", "from": "yesterday", "to": "2026-11-29T15:00:00Z"},
     422, "request.invalid"),
    ({"provider_account": "cardco:acct_store:test", "from": "2026-11-29T15:00:00", "to": "2026-11-29T16:00:00Z"},
     422, "request.invalid"),
    ({"provider_account": "cardco:acct_store:test", "to": "2026-11-29T16:00:00Z"}, 422, "request.invalid"),
])
async def test_bad_input_is_a_problem_with_a_stable_code(
        shop: Shop, operator: dict[str, str], body: dict[str, Any], status: int, code: str) -> None:
    response = await start(shop, operator, **body)
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert await shop.services.db.fetch_all("SELECT run_id FROM reconciliation_runs") == []


async def test_an_unknown_run_is_404_and_only_operators_may_use_runs(
        shop: Shop, operator: dict[str, str]) -> None:
    missing = await shop.http.get("/v1/ops/reconciliation/runs/8b6f0f9e-3c1d-4d7e-9a51-0d7d1c3f1e2a", headers=operator)
    assert (missing.status_code, missing.json()["code"]) == (404, "reconciliation.run_not_found")
    assert (await shop.http.get("/v1/ops/reconciliation/runs/not-a-uuid", headers=operator)).status_code == 404
    refused = await shop.http.get("/v1/ops/reconciliation/runs", headers=shop.merchant)
    assert (refused.status_code, refused.json()["code"]) == (403, "auth.forbidden")


async def test_the_clock_starts_a_run_per_account_every_interval_covering_the_interval_and_its_overlap(
        shop: Shop, clock: ManualClock) -> None:
    services = shop.services
    runs = Runs(services.db, clock, services.settings, services.http)
    interval, overlap = services.settings.reconciliation_interval_s, services.settings.reconciliation_overlap_s
    first = await runs.schedule()
    assert sorted(r["provider_account"] for r in first) == sorted(a.id for a in services.settings.provider_accounts)
    assert {(r["window_from"], r["window_to"], r["started_by"]) for r in first} == {
        (clock.now() - timedelta(seconds=interval + overlap), clock.now(), "clock")}
    clock.advance(interval - 1)
    assert await runs.schedule() == [], "not before the interval has passed"
    clock.advance(1)
    again = await runs.schedule()
    assert len(again) == len(first)
    assert again[0]["window_from"] < first[0]["window_to"], "consecutive windows overlap"
