"""The notification ceiling runs the product's statements (bench/pgbench_scripts.py,
bench/README.md): what the gateway runs for a ``payment.succeeded`` that names a Started attempt,
recorded statement by statement, is the certified ceiling's script in the same order, and the
record-less ceiling's but for the statements it names as left out (seed 001's certificate)."""

from __future__ import annotations

import pytest

from tests.bench_script_support import product_names, script_names
from tests.integration.notifications.conftest import Webhooks
from tests.statements_support import recorded_statements


@pytest.mark.parametrize("provider", ["cardco"])
async def test_the_notification_ceiling_runs_the_statements_of_a_matched_notification(
        webhooks: Webhooks, monkeypatch: pytest.MonkeyPatch) -> None:
    attempt = await webhooks.attempt()
    with recorded_statements(monkeypatch) as recorded:
        response = await webhooks.deliver(webhooks.payment_event(attempt, status="succeeded"))
    assert response.status_code == 204, response.text
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"
    assert product_names(recorded, "notification") == script_names("notification")
    assert product_names(recorded, "notification_certified") == script_names("notification_certified")
