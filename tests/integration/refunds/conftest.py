"""Refunds over the checkout shop: same database, CardCo and ManualClock."""

from __future__ import annotations

from typing import Any

from gateway.domain.attempts import Evidence
from gateway.pipeline.executor import Executor
from gateway.pipeline.reconciler import Reconciler
from gateway.refunds.attempts import EXECUTOR, REFUND, RefundJob
from tests.conftest import TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop, shop  # noqa: F401  (the checkout suite's Shop)
from tests.integration.notifications.conftest import cardco  # noqa: F401  (CardCo delivering into the app)
from tests.integration.test_jobs import jobs_runtime  # noqa: F401  (the real broker, shared with the job tests)


async def refund_rows(shop: Shop, table: str, order_id: str = "ORD-5521") -> list[dict[str, Any]]:  # noqa: F811
    """Rows of one refund table for the order, oldest first (``table`` is a fixed test literal)."""
    order_by = {"payment_refund_decisions": "position", "payment_refund_history": "event_id"}.get(
        table, "refund_number")
    return await shop.services.db.fetch_all(
        f"SELECT * FROM {table} WHERE order_id = %(o)s ORDER BY {order_by}", {"o": order_id})


async def order(shop: Shop, order_id: str = "ORD-5521") -> dict[str, Any]:  # noqa: F811
    response = await shop.http.get(f"/v1/orders/{order_id}", headers=shop.merchant)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def refund_job(shop: Shop, grant_id: str | None = None) -> RefundJob:  # noqa: F811
    """The job a refund decision's outbox row carries (the latest one, or ``grant_id``'s)."""
    rows = await shop.services.db.fetch_all(
        "SELECT payload FROM outbox_messages WHERE kind = 'payment-refund-job' ORDER BY message_id")
    payloads = [r["payload"] for r in rows if grant_id in (None, r["payload"]["grant_id"])]
    return RefundJob(payloads[-1]["order_id"], payloads[-1]["grant_id"], payloads[-1]["correlation_id"])


async def run_refund(shop: Shop, job: RefundJob) -> Any:  # noqa: F811
    """One delivery of the job, through the pipeline's executor as the refund worker."""
    services = shop.services
    return await Executor(REFUND, services.db, services.clock, services.settings, EXECUTOR, services.http).run(job)


async def reconcile_refunds(shop: Shop) -> int:  # noqa: F811
    services = shop.services
    return await Reconciler(REFUND, services.db, services.clock, services.settings, services.http).run_once()


def refund_calls(shop: Shop) -> list[dict[str, Any]]:  # noqa: F811
    return [r for r in shop.cardco.store.requests if r["method"] == "POST" and r["path"].endswith("/refunds")]


def refund_lookups(shop: Shop) -> list[dict[str, Any]]:  # noqa: F811
    return [r for r in shop.cardco.store.requests if r["method"] == "GET" and r["path"].startswith("/v1/refunds")]


def refunds_taken(shop: Shop) -> list[dict[str, Any]]:  # noqa: F811
    """CardCo's ledger of refunds that took effect: the ground truth for "nothing refunded twice"."""
    return shop.cardco.store.ledger()["refunds"]


async def started_then_cancelled(shop: Shop, order_id: str = "ORD-5521") -> dict[str, Any]:  # noqa: F811
    """An order whose attempt's send intent committed, then its cancellation (CancelRequested)."""
    await shop.order(order_id)
    attempts = shop.services.attempts
    started = await attempts.mark_started(await attempts.get_or_create_live(order_id, "cus_1"))
    assert started is not None
    cancelled = await shop.http.post(f"/v1/orders/{order_id}/cancel", headers=shop.merchant)
    assert cancelled.json()["state"] == "CancelRequested"
    return started


async def found_succeeded(shop: Shop, attempt: dict[str, Any],  # noqa: F811
                          provider_payment_id: str | None = "pay_1") -> None:
    """A recovery lookup finds the attempt's payment succeeded (seed 004: "the attempt resolves
    through reconciliation")."""
    await shop.services.attempts.apply_evidence(attempt["attempt_id"], Evidence(
        finding="succeeded", provider_account=TEST_ACCOUNT, provider_id=provider_payment_id,
        amount_minor=4250, currency="EUR"), actor="recovery-1", kind="lookup")


async def paid_after_cancel(shop: Shop) -> dict[str, Any]:  # noqa: F811
    """A payment CardCo really took (its response was lost), the order cancelled just after the
    send intent, and reconciliation finding the payment: the order is PaidAfterCancel."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "drop_response"})
    assert (await shop.pay()).status_code == 202
    await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    [attempt] = await shop.attempts()
    await found_succeeded(shop, attempt, next(iter(shop.cardco.store.payments)))
    assert (await order(shop))["state"] == "PaidAfterCancel"
    return attempt
