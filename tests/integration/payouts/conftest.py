"""A payout world over the real gateway app: seed 000's tenant T-0417, beneficiary BEN-2208,
destination DST-77 (registered 8 days ago), a published policy release, clerk-22 (limit
10,000.00 EUR), an approver, an operator and an admin; CardCo in-process on the same clock."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
import respx

from gateway.clock import ManualClock
from gateway.payouts import reference
from gateway.payouts.attempts import EXECUTOR, PAYOUT
from gateway.payouts.grant_sweep import expire_unused
from gateway.payouts.sweeper import sweep_once
from gateway.payouts.validation import PayoutJob
from gateway.pipeline.executor import Executor
from gateway.pipeline.kind import Presenter
from gateway.pipeline.reconciler import Reconciler
from gateway.services import Services
from gateway.settings import Settings
from provider_fake import CardCo
from provider_fake.app import create_app as cardco_app
from tests.integration.test_jobs import jobs_runtime  # noqa: F401 - the real broker, shared with the job tests

TOKEN = "dst_tok_secret_77"
POLICY = "payout-policy/2026.10"
AMOUNT = 425_000  # 4,250.00 EUR


@dataclass
class World:
    http: httpx.AsyncClient
    services: Services
    settings: Settings
    clock: ManualClock
    cardco: CardCo
    tokens: dict[str, dict[str, str]] = field(default_factory=dict)

    # Reference data -------------------------------------------------------------------------
    async def put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.put(path, json=body, headers=self.tokens["admin"])
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def tenant(self, **changes: Any) -> dict[str, Any]:
        body = {"daily_limit_minor": 5_000_000, "currency": "EUR", "payouts_suspended": False,
                "settlement_time_zone": "Europe/Berlin"} | changes
        return await self.put("/v1/tenants/T-0417", body)

    async def beneficiary(self, **changes: Any) -> dict[str, Any]:
        return await self.put("/v1/beneficiaries/BEN-2208",
                              {"tenant_id": "T-0417", "verified": True, "status": "Active"} | changes)

    async def destination(self, token: str = TOKEN, beneficiary_id: str = "BEN-2208") -> dict[str, Any]:
        return await self.put("/v1/destinations/DST-77", {"beneficiary_id": beneficiary_id, "provider_token": token})

    # Payouts ----------------------------------------------------------------------------------
    async def create(self, payout_id: str = "PAY-3107", amount_minor: int = AMOUNT, clerk: str = "clerk",
                     release_in: timedelta = timedelta(hours=6)) -> dict[str, Any]:
        response = await self.http.post("/v1/payouts", headers=self.tokens[clerk], json={
            "payout_id": payout_id, "beneficiary_id": "BEN-2208", "destination_id": "DST-77",
            "amount_minor": amount_minor, "currency": "EUR", "purpose": "supplier-invoice INV-9031",
            "release_at": (self.clock.now() + release_in).isoformat()})
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def post(self, path: str, body: dict[str, Any] | None = None, who: str = "clerk") -> httpx.Response:
        return await self.http.post(path, json=body if body is not None else {}, headers=self.tokens[who])

    async def submit(self, payout_id: str = "PAY-3107", **terms: Any) -> dict[str, Any]:
        record = await self.payout(payout_id)
        body = {"beneficiary_id": record["beneficiary_id"], "destination_id": record["destination_id"],
                "amount_minor": record["amount_minor"], "currency": record["currency"]} | terms
        response = await self.post(f"/v1/payouts/{payout_id}/submit", body)
        assert response.status_code == 200, response.text
        decision: dict[str, Any] = response.json()
        return decision

    async def payout(self, payout_id: str = "PAY-3107", who: str = "clerk") -> dict[str, Any]:
        response = await self.http.get(f"/v1/payouts/{payout_id}", headers=self.tokens[who])
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def approved(self, payout_id: str = "PAY-3107", amount_minor: int = AMOUNT) -> PayoutJob:
        """Create, submit (Allowed), and move the clock to the grant's not_before: the job to run."""
        await self.create(payout_id, amount_minor)
        decision = await self.submit(payout_id)
        assert decision["outcome"] == "Allowed", decision
        job = await self.job(decision["grant"]["grant_id"])
        self.clock.set(self.clock.now().fromisoformat(decision["grant"]["not_before"].replace("Z", "+00:00")))
        return job

    async def job(self, grant_id: str) -> PayoutJob:
        row = await self.services.db.fetch_one(
            "SELECT payload FROM outbox_messages WHERE kind = 'payout-job' AND payload->>'grant_id' = %(g)s",
            {"g": grant_id})
        assert row is not None
        payload = row["payload"]
        return PayoutJob(payload["payout_id"], payload["grant_id"], payload["correlation_id"])

    def executor(self, presenter: Presenter = EXECUTOR, settings: Settings | None = None,
                 db: Any = None) -> Executor:
        return Executor(PAYOUT, db or self.services.db, self.clock, settings or self.settings, presenter,
                        self.services.http)

    async def run(self, job: PayoutJob, presenter: Presenter = EXECUTOR) -> Any:
        return await self.executor(presenter).run(job)

    async def reconcile(self) -> int:
        return await Reconciler(PAYOUT, self.services.db, self.clock, self.settings, self.services.http).run_once()

    async def sweep(self) -> dict[str, int]:
        expired = await expire_unused(self.services.db, self.clock, self.settings)
        return await sweep_once(self.services.db, self.clock) | {"grants_expired": expired}

    # CardCo ------------------------------------------------------------------------------------
    async def faults(self, *rules: dict[str, Any]) -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=cardco_app(self.cardco)),
                                     base_url="http://cardco.test") as control:
            response = await control.post("/_control/faults", json={"rules": list(rules)})
            assert response.status_code == 200, response.text

    def submits(self) -> list[dict[str, Any]]:
        return [r for r in self.cardco.store.requests if r["method"] == "POST" and r["path"] == "/v1/payouts"]

    def lookups(self) -> list[dict[str, Any]]:
        return [r for r in self.cardco.store.requests if r["method"] == "GET" and r["path"].startswith("/v1/payouts")]

    def sent_bodies(self) -> list[dict[str, Any]]:
        return [json.loads(base64.b64decode(r["body_base64"])) for r in self.submits()]

    def ledger(self) -> list[dict[str, Any]]:
        return [p.ledger_entry() for p in self.cardco.store.payouts.values()]

    # Database views ------------------------------------------------------------------------------
    async def rows(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        return await self.services.db.fetch_all(sql, params)

    async def history(self, payout_id: str = "PAY-3107") -> list[dict[str, Any]]:
        return await self.rows("SELECT kind, actor, detail FROM payout_history WHERE payout_id = %(p)s "
                               "ORDER BY event_id", p=payout_id)

    async def totals(self) -> tuple[int, int]:
        row = await self.services.db.fetch_one("SELECT paid_minor, reserved_minor FROM tenant_daily_totals")
        return (0, 0) if row is None else (row["paid_minor"], row["reserved_minor"])


@pytest.fixture
async def world(client: httpx.AsyncClient, services: Services, settings: Settings, clock: ManualClock,
                cardco: CardCo, cardco_http: respx.MockRouter) -> World:
    return await furnish(World(client, services, settings, clock, cardco))


async def furnish(created: World) -> World:
    """Tokens for every role, and the tenant, beneficiary, destination and policy release."""
    services, clock = created.services, created.clock
    for name, role, extra in (("admin", "admin", {}), ("operator", "operator", {}),
                              ("clerk", "clerk", {"tenant_id": "T-0417", "approval_limit_minor": 1_000_000}),
                              ("approver", "clerk", {"tenant_id": "T-0417", "approval_limit_minor": 100_000_000}),
                              ("other_tenant", "clerk", {"tenant_id": "T-9999", "approval_limit_minor": 100_000_000})):
        subject = {"clerk": "clerk-22", "approver": "approver-7"}.get(name, f"{name}-{uuid.uuid4().hex[:6]}")
        token = await services.tokens.create(role, subject, **extra)  # type: ignore[arg-type]
        created.tokens[name] = {"Authorization": f"Bearer {token}"}
    await created.tenant()
    await created.beneficiary()
    await reference.upsert_destination(services.db, clock.now() - timedelta(days=8), "DST-77",
                                       beneficiary_id="BEN-2208", provider_token=TOKEN, actor="test")
    await created.put("/v1/policy/payout.submit", {"version": POLICY})
    return created
