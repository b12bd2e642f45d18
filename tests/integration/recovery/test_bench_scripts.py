"""The checkout and recovery ceilings run the product's statements (bench/pgbench_scripts.py,
bench/README.md): what the gateway runs for one checkout answered ``succeeded`` and for one
recovery pass that finds the payment, recorded statement by statement, is the ceiling's script in
the same order, but for the statements it names as left out (the checkout: the cached bearer
token's lookup; the recovery pass: the lookup tokens and seed 001's certificate)."""

from __future__ import annotations

import pytest

from gateway.clock import ManualClock
from tests.bench_script_support import product_names, script_names
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import WorkerFactory
from tests.statements_support import recorded_statements


@pytest.mark.parametrize("provider", ["cardco"])
async def test_the_checkout_ceiling_runs_the_statements_of_a_checkout(
        shop: Shop, monkeypatch: pytest.MonkeyPatch) -> None:
    await shop.order("PGB-1")
    with recorded_statements(monkeypatch) as recorded:
        response = await shop.pay("PGB-1")
    assert response.json()["state"] == "Succeeded", response.text
    assert product_names(recorded, "checkout") == script_names("checkout")


@pytest.mark.parametrize("provider", ["cardco"])
async def test_the_recovery_ceiling_runs_the_statements_of_a_pass(
        shop: Shop, worker: WorkerFactory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 004, recovery that finds the payment: one pass, then the sweep's last claim, which finds
    nothing more due."""
    await shop.order("PGB-1")
    await shop.faults({"operation": "create_payment", "action": "drop_response", "times": 0})
    assert (await shop.pay("PGB-1")).json()["state"] == "Unknown"
    await shop.faults()
    clock.advance(60)
    with recorded_statements(monkeypatch) as recorded:
        report = await worker().sweep()
    assert report.outcomes == {"found:succeeded->Succeeded": 1}
    assert product_names(recorded, "recovery") == script_names("recovery") + ["gateway/payments/leases.sql claim_due"]
