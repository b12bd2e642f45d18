"""The gateway ASGI application.

``create_app(settings)`` opens its services in the lifespan (or takes ready ones, for tests);
``python -m gateway.web`` (the Procfile's ``web``) serves ``app_from_environment`` under uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from gateway.clock import Clock
from gateway.collector import settle_collector
from gateway.domain.errors import PaygateError
from gateway.http import (
    certificates,
    console,
    health,
    metrics,
    openapi,
    ops_attempts,
    ops_escalations,
    ops_notifications,
    ops_outbox,
    ops_overview,
    ops_payouts,
    ops_reconciliation,
    ops_refunds,
    orders,
    payouts,
    problems,
    reference_data,
    webhooks,
)
from gateway.http.middleware import RequestEnvelope
from gateway.logs import configure_logging
from gateway.services import Services
from gateway.settings import Settings, load_settings
from gateway.store.counters import flush_every, flush_logged


def routes() -> list[BaseRoute]:
    """Every route of the gateway; each area contributes its own list from its http module."""
    return [
        # The hot paths first: Starlette tries the routes in order, one regex each.
        *webhooks.routes(),
        *orders.routes(),
        *ops_escalations.routes(),
        *ops_outbox.routes(),
        *ops_attempts.routes(),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route("/metrics", metrics.metrics, methods=["GET"]),
        Route("/openapi.json", openapi.openapi, methods=["GET"]),
        *console.routes(),
        *ops_overview.routes(),
        *ops_notifications.routes(),
        *ops_payouts.routes(),
        *ops_refunds.routes(),
        *ops_reconciliation.routes(),
        *payouts.routes(),
        *reference_data.routes(),
        *certificates.routes(),
    ]


def create_app(settings: Settings, *, clock: Clock | None = None, services: Services | None = None) -> Starlette:
    """The app; with ``services`` given it uses them and leaves closing them to the caller."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if services is not None:
            app.state.services = services
            yield
            return
        opened = await Services.open(settings, clock)
        app.state.services = opened
        flusher = asyncio.create_task(flush_every(opened.db, opened.clock, settings.metrics_flush_s))
        try:
            yield
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            await flush_logged(opened.db)  # what this process counted since, before its pool closes
            await opened.close()

    app = Starlette(
        routes=routes(),
        middleware=[Middleware(RequestEnvelope, max_body_bytes=settings.max_body_bytes)],
        exception_handlers={
            PaygateError: problems.handle_paygate_error,
            HTTPException: problems.handle_http_exception,
            Exception: problems.handle_unexpected,
        },
        lifespan=lifespan,
    )
    if services is not None:
        app.state.services = services
    return app


def app_from_environment() -> Starlette:
    """Build settings from the environment and the app from them (the ``web`` process), then
    :func:`settle_collector`."""
    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    app = create_app(settings)
    settle_collector()
    return app
