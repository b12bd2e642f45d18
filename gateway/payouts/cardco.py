"""CardCo's payouts API as the executor and the reconciler use it (API.md, "provider_fake: CardCo":
``POST /v1/payouts`` with ``Idempotency-Key`` and ``expires_at``; ``GET /v1/payouts?client_reference=``).

The API key is read here, at the call, and only after a confirmed claim (seed 000, "Worker Identity
Is Presenter Identity"). Every send of an attempt carries byte-identical parameters, the attempt's
send deadline as ``expires_at``, and its fixed idempotency key. The call is cut off by a budget on
the injected clock; every way it ends without an answer becomes a :class:`NoResponse`. Lookup
records replace the destination token with its digest before anything else sees them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx

from gateway.clock import Clock
from gateway.domain.payout_outcomes import NoResponse, Observation, ProviderResponse
from gateway.payouts.config import payout_account
from gateway.settings import ProviderAccount, Settings


class CredentialUnavailable(Exception):
    """The provider credential could not be acquired; nothing may be sent."""


def destination_digest(pepper: str, token: str) -> str:
    """What evidence may hold about a destination token: its HMAC under the server's pepper."""
    return hmac.new(pepper.encode(), token.encode(), hashlib.sha256).hexdigest()


def request_body(attempt: dict[str, Any], token: str) -> bytes:
    """The attempt's parameters, serialized the same way for every send of the attempt."""
    expires_at = attempt["send_deadline"].isoformat().replace("+00:00", "Z")
    return json.dumps({"amount_minor": attempt["amount_minor"], "currency": attempt["currency"],
                       "destination_token": token, "client_reference": attempt["client_reference"],
                       "expires_at": expires_at}, separators=(",", ":"), sort_keys=True).encode()


def recall_body(attempt: dict[str, Any]) -> bytes:
    expires_at = attempt["send_deadline"].isoformat().replace("+00:00", "Z")
    return json.dumps({"client_reference": attempt["client_reference"], "expires_at": expires_at},
                      separators=(",", ":"), sort_keys=True).encode()


def recall_path(provider_payout_id: str) -> str:
    """``POST /v1/payouts/{id}/recalls``: the provider payout being recalled is in the path."""
    return f"/v1/payouts/{provider_payout_id}/recalls"


class CardCoPayouts:
    def __init__(self, account: ProviderAccount, clock: Clock, pepper: str) -> None:
        self.account = account
        self.clock = clock
        self.pepper = pepper

    @classmethod
    def of(cls, settings: Settings, clock: Clock) -> CardCoPayouts:
        """The client for the platform's payout account; destination digests keyed by the pepper."""
        return cls(payout_account(settings), clock, settings.token_pepper.get_secret_value())

    def credential(self) -> str:
        key = self.account.api_key.get_secret_value()
        if not key.strip():
            raise CredentialUnavailable(self.account.id)
        return key

    def _headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}", "CardCo-Account": self.account.id,
                "Content-Type": "application/json"}

    async def submit(self, attempt: dict[str, Any], token: str, key: str) -> Observation:
        return await self._create("/v1/payouts", request_body(attempt, token), attempt["idempotency_key"], key)

    async def recall(self, attempt: dict[str, Any], key: str) -> Observation:
        """``POST /v1/payouts/{id}/recalls`` (docs/decisions/0015): the recall attempt's reference,
        its send deadline as ``expires_at``, its own fixed key; byte-identical on every send."""
        return await self._create(recall_path(attempt["provider_payout_id"]), recall_body(attempt),
                                  attempt["idempotency_key"], key)

    async def _create(self, path: str, body: bytes, idempotency_key: str, key: str) -> Observation:
        headers = self._headers(key) | {"Idempotency-Key": idempotency_key}
        try:
            async with (self.clock.budget(self.account.call_budget_s),
                        httpx.AsyncClient(base_url=self.account.base_url, timeout=None) as http):
                response = await http.post(path, content=body, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            return NoResponse("timeout")
        except httpx.TransportError:
            return NoResponse("transport")
        retry_after = response.headers.get("retry-after", "0")
        return ProviderResponse(response.status_code, response.content,
                                float(retry_after) if retry_after.isdigit() else 0.0)

    async def lookup(self, client_reference: str) -> list[dict[str, Any]] | None:
        """The provider's records for one attempt's reference; None when the lookup itself failed."""
        return await self._list("/v1/payouts", client_reference)

    async def lookup_recalls(self, client_reference: str) -> list[dict[str, Any]] | None:
        """The recall records for one recall attempt's reference (``<payout_id>-r<N>``)."""
        return await self._list("/v1/payout_recalls", client_reference)

    async def _list(self, path: str, client_reference: str) -> list[dict[str, Any]] | None:
        try:
            async with (self.clock.budget(self.account.call_budget_s),
                        httpx.AsyncClient(base_url=self.account.base_url, timeout=None) as http):
                response = await http.get(path, params={"client_reference": client_reference},
                                          headers=self._headers(self.credential()))
            data = response.json()["data"] if response.status_code == 200 else None
        except (TimeoutError, httpx.HTTPError, ValueError, KeyError, TypeError, CredentialUnavailable):
            return None
        if not isinstance(data, list):
            return None
        return [self._without_token(record) for record in data if isinstance(record, dict)]

    def _without_token(self, record: dict[str, Any]) -> dict[str, Any]:
        token = record.pop("destination_token", None)
        record["destination_digest"] = destination_digest(self.pepper, token) if isinstance(token, str) else None
        return record
