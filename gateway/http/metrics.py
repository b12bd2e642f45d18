"""Prometheus metrics: this process's HTTP counters plus gauges read from the database, which
are the fleet-wide truth (attempts by state, outbox backlog, open escalations, process liveness,
grants that expired unused or are due and unclaimed)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response

from gateway.services import Services
from gateway.store.gauges import database_gauges

REGISTRY = CollectorRegistry(auto_describe=True)
HTTP_REQUESTS = Counter(
    "paygate_http_requests", "HTTP requests handled", ["method", "route", "status"], registry=REGISTRY)
HTTP_SECONDS = Histogram(
    "paygate_http_request_seconds", "HTTP request latency", ["method", "route"], registry=REGISTRY)

_HELP = {
    "paygate_payment_attempts": "Payment attempts by state",
    "paygate_outbox_messages": "Outbox messages by delivery state",
    "paygate_payment_refund_attempts": "Refund attempts by state (docs/decisions/0019)",
    "paygate_orders_paid_after_cancel": "Orders whose payment succeeded after their cancellation, not yet refunded",
    "paygate_open_escalations": "Escalation episodes not yet resolved",
    "paygate_process_last_seen_age_seconds": "Seconds since the freshest heartbeat of each process kind",
    "paygate_payout_grants_expired_unused": "Payout and recall grants that expired unconsumed",
    "paygate_payout_grants_due_unclaimed": "Payout and recall grants past not_before, unexpired and not yet claimed",
}


async def metrics(request: Request) -> Response:
    services: Services = request.app.state.services
    rows = await database_gauges(services.db, services.clock.now())
    lines: list[str] = []
    for name, help_text in _HELP.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{{{r['labels']}}} {r['value']}" if r["labels"] else f"{name} {r['value']}"
                  for r in rows if r["name"] == name]
    text = generate_latest(REGISTRY).decode() + "\n".join(lines) + "\n"
    return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")
