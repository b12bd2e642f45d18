"""The CardCo ASGI application: `uvicorn provider_fake.app:app`.

API.md "provider_fake: CardCo": runs as its own ASGI app and in-process for tests, one
implementation for both. The module-level `app` reads its config from the JSON file named by
`CARDCO_CONFIG` (built-in demo accounts otherwise); its lifespan runs the background tick that
completes scheduled changes and delivers webhooks by the fake clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from provider_fake.api import ProviderApi, request_record
from provider_fake.clock import rfc3339
from provider_fake.config import config_from_env
from provider_fake.control import ControlApi
from provider_fake.fake import CardCo
from provider_fake.stripe.api import PREFIX as STRIPE_PREFIX
from provider_fake.stripe.api import StripeApi


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and methods answer in their mount's error shape (CardCo's, or Stripe's
    "Unrecognized request URL"), and are logged for `GET /_control/requests` like every other
    request outside `/_control/` (API.md)."""
    if not request.url.path.startswith("/_control"):
        cardco: CardCo = request.app.state.cardco
        body = await request.body()
        async with cardco.store.lock:
            cardco.store.requests.append(request_record(request, body, rfc3339(cardco.clock.now())))
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if request.url.path.startswith(STRIPE_PREFIX + "/"):
        path = request.url.path.removeprefix(STRIPE_PREFIX)
        message = f"Unrecognized request URL ({request.method}: {path})."
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
    return JSONResponse({"error": {"code": code, "message": str(exc)}}, status_code=status)


def create_app(fake: CardCo | None = None) -> Starlette:
    """A Starlette app serving `fake` (a new CardCo from CARDCO_CONFIG if None)."""
    cardco = fake or CardCo(config_from_env())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with cardco.running():
            yield

    app = Starlette(
        routes=[*ProviderApi(cardco).routes(), *StripeApi(cardco).routes(), *ControlApi(cardco).routes()],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.cardco = cardco
    return app


app = create_app()
