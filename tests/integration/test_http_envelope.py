"""The gateway's edge: health, readiness against the real servers, metrics, problem documents,
the body-size limit and correlation ids (API.md, Conventions and Operations)."""

from __future__ import annotations

import httpx

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from paygate_local.servers import free_port


async def test_healthz_answers_without_a_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_is_200_when_database_and_broker_answer(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}


async def test_readyz_is_503_naming_the_broker_when_it_is_unreachable(settings: Settings, clock: ManualClock) -> None:
    dead = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    services = await Services.open(dead, clock)
    try:
        app = create_app(dead, services=services)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://g") as http:
            response = await http.get("/readyz")
    finally:
        await services.close()
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["broker"].startswith("unavailable")


async def test_metrics_exposes_http_counters_and_database_gauges(client: httpx.AsyncClient, services: Services) -> None:
    async with services.db.transaction() as conn:
        await conn.execute("INSERT INTO process_heartbeats (process_id, kind, started_at, seen_at)"
                           " VALUES ('worker:h:1', 'worker', %(now)s, %(now)s)", {"now": services.clock.now()})
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'paygate_http_requests_total{method="GET",route="/healthz",status="200"}' in text
    assert "paygate_open_escalations 0" in text
    assert 'paygate_process_last_seen_age_seconds{kind="worker"} 0.0' in text


async def test_a_body_over_256_kib_is_413_before_any_handler(client: httpx.AsyncClient) -> None:
    response = await client.post("/healthz", content=b"x" * (256 * 1024 + 1))
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "request.too_large"


async def test_a_streamed_body_over_the_limit_without_length_is_413(client: httpx.AsyncClient) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(5):
            yield b"y" * (64 * 1024)

    response = await client.post("/healthz", content=chunks())
    assert response.status_code == 413


async def test_unknown_route_is_a_problem_document(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"type": "https://paygate.dev/problems/not_found", "title": "Not found.",
                               "status": 404, "code": "not_found"}


async def test_wrong_method_is_405_problem(client: httpx.AsyncClient) -> None:
    response = await client.delete("/healthz")
    assert response.status_code == 405
    assert response.json()["code"] == "request.method_not_allowed"


async def test_correlation_id_is_echoed_or_created(client: httpx.AsyncClient) -> None:
    echoed = await client.get("/healthz", headers={"X-Correlation-Id": "COR-8812"})
    assert echoed.headers["x-correlation-id"] == "COR-8812"
    created = await client.get("/healthz", headers={"X-Correlation-Id": "bad id with spaces"})
    assert created.headers["x-correlation-id"].startswith("cor_")
