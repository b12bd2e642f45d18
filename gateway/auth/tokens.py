"""Creating tokens and turning a presented token into a :class:`Principal`.

A token is ``pgt_`` plus 32 random bytes (URL-safe base64). The database holds only
``HMAC-SHA256(pepper, token)``; the pepper lives in configuration, not in the database, so a
leaked table cannot be replayed and cannot be brute-forced offline without the pepper.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gateway.clock import Clock
from gateway.domain.payout_approval import Clerk
from gateway.store.db import Database
from gateway.store.queries import load_queries

Role = Literal["merchant", "customer", "operator", "clerk", "admin"]
ROLES: tuple[Role, ...] = ("merchant", "customer", "operator", "clerk", "admin")
TOKEN_PREFIX = "pgt_"

_SQL = load_queries("gateway.auth")


@dataclass(frozen=True)
class Principal:
    """Who is calling: a role, the subject it acts as, and for clerks their tenant and limit."""

    role: Role
    subject: str
    tenant_id: str | None = None
    approval_limit_minor: int | None = None
    token_id: int | None = None


def token_hash(pepper: str, token: str) -> str:
    return hmac.new(pepper.encode(), token.encode(), hashlib.sha256).hexdigest()


CACHE_LIMIT = 10_000  # principals remembered per process; the cache starts over when full


class Tokens:
    """The api_tokens aggregate.

    With ``cache_s`` > 0, a principal found for a token is remembered for that many seconds on the
    injected clock (docs/decisions/0032): a revoked or expired token keeps working in each process
    for at most ``cache_s`` after its revocation or expiry. Unknown tokens are never remembered."""

    def __init__(self, db: Database, clock: Clock, pepper: str, *, cache_s: float = 0.0) -> None:
        self._db = db
        self._clock = clock
        self._pepper = pepper
        self._cache_s = cache_s
        self._cache: dict[str, tuple[Principal, datetime]] = {}

    async def create(
        self,
        role: Role,
        subject: str,
        *,
        tenant_id: str | None = None,
        approval_limit_minor: int | None = None,
    ) -> str:
        """Store a new token's hash and return the token; it is never shown again."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}")
        if not subject.strip():
            raise ValueError("subject must not be blank")
        if role == "clerk" and not tenant_id:
            raise ValueError("a clerk token needs --tenant")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._db.transaction() as conn:
            await conn.execute(_SQL["insert_token"], {
                "token_hash": token_hash(self._pepper, token),
                "role": role,
                "subject": subject.strip(),
                "tenant_id": tenant_id,
                "approval_limit_minor": approval_limit_minor,
                "now": self._clock.now(),
            })
        return token

    async def clerks_of(self, tenant_ids: Sequence[str]) -> dict[str, list[Clerk]]:
        """Each tenant's clerks with a token valid now (who may acknowledge or approve its payouts)."""
        rows = await self._db.fetch_all(_SQL["clerks_of_tenants"], {"tenant_ids": list(tenant_ids),
                                                                    "now": self._clock.now()})
        clerks: dict[str, list[Clerk]] = {tenant_id: [] for tenant_id in tenant_ids}
        for row in rows:
            clerks[row["tenant_id"]].append(Clerk(row["subject"], row["approval_limit_minor"]))
        return clerks

    async def authenticate(self, token: str) -> Principal | None:
        """The principal behind ``token``, or None for an unknown or revoked one."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = token_hash(self._pepper, token)
        now = self._clock.now()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]
        row = await self._db.fetch_one(_SQL["find_principal"], {"token_hash": digest, "now": now})
        if row is None:
            self._cache.pop(digest, None)
            return None
        principal = Principal(
            role=row["role"],
            subject=row["subject"],
            tenant_id=row["tenant_id"],
            approval_limit_minor=row["approval_limit_minor"],
            token_id=row["token_id"],
        )
        if self._cache_s > 0:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[digest] = (principal, now + timedelta(seconds=self._cache_s))
        return principal
