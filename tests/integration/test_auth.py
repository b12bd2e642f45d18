"""Bearer tokens (API.md, Conventions → Auth): created by the CLI, stored hashed, mapped to a principal."""

from __future__ import annotations

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.app import create_app
from gateway.auth.tokens import Tokens
from gateway.clock import ManualClock
from gateway.http.auth import require
from gateway.services import Services
from gateway.settings import Settings


async def test_a_created_token_authenticates_and_only_its_hash_is_stored(services: Services) -> None:
    token = await services.tokens.create("clerk", "clerk-1", tenant_id="T-0417", approval_limit_minor=500_000)
    principal = await services.tokens.authenticate(token)
    assert principal is not None
    assert (principal.role, principal.subject, principal.tenant_id, principal.approval_limit_minor) == \
        ("clerk", "clerk-1", "T-0417", 500_000)
    rows = await services.db.fetch_all("SELECT token_hash FROM api_tokens")
    assert len(rows) == 1
    assert token not in rows[0]["token_hash"]


async def test_unknown_and_malformed_tokens_authenticate_nobody(services: Services) -> None:
    await services.tokens.create("operator", "op-1")
    assert await services.tokens.authenticate("pgt_unknown") is None
    assert await services.tokens.authenticate("not-a-token") is None


async def test_a_revoked_token_stops_working_at_its_revocation_time(services: Services, clock: ManualClock) -> None:
    token = await services.tokens.create("operator", "op-1")
    async with services.db.transaction() as conn:
        await conn.execute("UPDATE api_tokens SET revoked_at = %(at)s", {"at": clock.now()})
    assert await services.tokens.authenticate(token) is None


async def test_a_revoked_token_keeps_working_at_most_token_cache_s_in_a_process(
        services: Services, clock: ManualClock) -> None:
    """Docs/decisions/0032: token lookups are remembered for token_cache_s (5 s by
    default) on the injected clock; revocation takes effect in every process within that delay."""
    tokens = Tokens(services.db, clock, "pepper", cache_s=5)
    token = await tokens.create("operator", "op-1")
    assert await tokens.authenticate(token) is not None
    async with services.db.transaction() as conn:
        await conn.execute("UPDATE api_tokens SET revoked_at = %(at)s", {"at": clock.now()})
    clock.advance(4.9)
    assert await tokens.authenticate(token) is not None  # remembered: no lookup
    clock.advance(0.1)
    assert await tokens.authenticate(token) is None  # looked up again: revoked


@pytest.mark.parametrize("role, subject, tenant", [("clerk", "c", None), ("operator", " ", None), ("root", "x", None)])
async def test_invalid_token_requests_are_refused(services: Services, role: str, subject: str,
                                                  tenant: str | None) -> None:
    with pytest.raises(ValueError):
        await services.tokens.create(role, subject, tenant_id=tenant)  # type: ignore[arg-type]
    assert await services.db.fetch_all("SELECT 1 FROM api_tokens") == []


@pytest.fixture
async def guarded(settings: Settings, services: Services) -> httpx.AsyncClient:
    """The real app plus one route guarded like every operator endpoint."""

    async def operators_only(request: Request) -> JSONResponse:
        principal = await require(request, "operator")
        return JSONResponse({"subject": principal.subject})

    app = create_app(settings, services=services)
    app.router.routes.append(Route("/v1/guarded", operators_only))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway.test")


async def test_missing_token_is_401_auth_missing(guarded: httpx.AsyncClient) -> None:
    response = await guarded.get("/v1/guarded")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "auth.missing"


@pytest.mark.parametrize("header", ["Bearer pgt_nope", "Basic abc", "Bearer "])
async def test_unknown_token_is_401_auth_invalid(guarded: httpx.AsyncClient, header: str) -> None:
    response = await guarded.get("/v1/guarded", headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["code"] == "auth.invalid"


async def test_wrong_role_is_403_and_right_role_passes(guarded: httpx.AsyncClient, services: Services) -> None:
    customer = await services.tokens.create("customer", "cus-1")
    operator = await services.tokens.create("operator", "op-1")
    response = await guarded.get("/v1/guarded", headers={"Authorization": f"Bearer {customer}"})
    assert response.status_code == 403
    assert response.json()["code"] == "auth.forbidden"
    response = await guarded.get("/v1/guarded", headers={"Authorization": f"Bearer {operator}"})
    assert response.status_code == 200
    assert response.json() == {"subject": "op-1"}
