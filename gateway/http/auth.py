"""Who is calling: the bearer token mapped to a principal (API.md, Conventions → Auth)."""

from __future__ import annotations

from starlette.requests import Request

from gateway.auth.tokens import Principal, Role
from gateway.domain.errors import AuthInvalid, AuthMissing, Forbidden
from gateway.http.app_services import services_of


async def authenticate(request: Request) -> Principal:
    """401 ``auth.missing`` without a bearer token, 401 ``auth.invalid`` for an unknown one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header:
        raise AuthMissing()
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthInvalid("use 'Authorization: Bearer <token>'")
    services = services_of(request)
    principal = await services.tokens.authenticate(token.strip())
    if principal is None:
        raise AuthInvalid()
    return principal


async def require(request: Request, *roles: Role) -> Principal:
    """The caller, who must hold one of ``roles`` (403 ``auth.forbidden`` otherwise).

    Order resources do not use this for customers of other orders: they answer 404 so as never
    to reveal that an order exists.
    """
    principal = await authenticate(request)
    if principal.role not in roles:
        raise Forbidden(f"requires role {' or '.join(roles)}")
    return principal
