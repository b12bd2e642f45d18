"""Prometheus metrics (API.md, Operations; docs/decisions/0040 and 0041).

Three sources, one text: this process's HTTP counters; gauges read from the database at scrape time
(attempts by state, Unknown attempts by age, the reconciler's backlog, outbox lag and dead letters,
open escalations, process liveness, grants that expired unused or are due and unclaimed, and, for
the Overview's panels in Grafana, payouts by state and each account's lookup tokens and pause); and the
fleet's event counters and histograms (``gateway.instruments``), which every process flushes into
PostgreSQL: this process flushes its own first, so a scrape includes everything it counted.
Every label value is a state, kind or reason code, never an id, account, token or free text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from gateway import instruments
from gateway.domain.attempt_kinds import KINDS, pipeline_kinds
from gateway.http.app_services import services_of
from gateway.reconciliation.runs import last_finished
from gateway.store import overview
from gateway.store.counters import fleet_counts, flush
from gateway.store.gauges import DatabaseGauges, database_gauges

REGISTRY = CollectorRegistry(auto_describe=True)
HTTP_REQUESTS = Counter(
    "paygate_http_requests", "HTTP requests handled", ["method", "route", "status"], registry=REGISTRY)
HTTP_SECONDS = Histogram(
    "paygate_http_request_seconds", "HTTP request latency", ["method", "route"], registry=REGISTRY)

GAUGES = {
    "paygate_payment_attempts": "Payment attempts by state",
    "paygate_outbox_messages": "Outbox messages by delivery state",
    "paygate_payment_refund_attempts": "Refund attempts by state (docs/decisions/0019)",
    "paygate_orders_paid_after_cancel": "Orders whose payment succeeded after their cancellation, not yet refunded",
    "paygate_open_escalations": "Escalation episodes not yet resolved",
    "paygate_process_last_seen_age_seconds": "Seconds since the freshest heartbeat of each process kind",
    "paygate_payout_grants_expired_unused": "Payout, recall and refund grants that expired unconsumed",
    "paygate_payout_grants_due_unclaimed": "Payout, recall and refund grants past not_before, unexpired and unclaimed",
    "paygate_payout_attempts_in_flight": "Attempt-pipeline attempts Claimed, Started or Unknown, by kind",
    "paygate_payout_reconciliation_backlog_seconds": "Seconds the most overdue reconciler check has been due",
    "paygate_outbox_lag_seconds": "Age of the oldest undelivered outbox row, by message kind",
    "paygate_outbox_dead_letters": "Dead-lettered outbox rows not retried or discarded, by message kind",
    "paygate_payout_outbox_pending": "Undelivered job rows of the attempt pipeline, by kind",
    "paygate_payout_outbox_lag_seconds": "Age of the oldest undelivered job row of the attempt pipeline, by kind",
    "paygate_payout_outbox_dead_letters": "Dead-lettered job rows of the attempt pipeline, by kind",
    "paygate_escalations_open": "Open escalation episodes, by reason",
    "paygate_escalations_oldest_open_seconds": "Age of the oldest open escalation episode, by reason",
    "paygate_payout_escalations_open": "Open escalation episodes of the attempt pipeline, by kind and reason",
    "paygate_payout_escalations_oldest_open_seconds": "Age of the oldest open pipeline escalation, by kind and reason",
    "paygate_payouts": "Payouts by state",
    "paygate_provider_lookup_tokens": "Lookup tokens left in each configured provider account's bucket",
    "paygate_provider_paused": "1 while a configured provider account's lookups are paused after a 429, else 0",
    "paygate_reconciliation_last_finished_age_seconds":
        "Seconds since each configured account's last provider-side reconciliation run finished",
    "paygate_reconciliation_interval_seconds": "How often the clock starts a reconciliation run per account",
}
# Each kind's histogram of Unknown ages: the pipeline's kinds share one, labelled by kind (listed first).
UNKNOWN_AGES = {kind.name: "paygate_payout_unknown_attempt_age_seconds" if kind.pipeline
                else "paygate_payment_unknown_attempt_age_seconds"
                for kind in sorted(KINDS, key=lambda kind: not kind.pipeline)}
_AGE_HELP = "Attempts Unknown now, by seconds since their send began (a snapshot)"
# The outbox job kinds of the attempt pipeline: their rows are also shown per pipeline kind.
JOB_KINDS = {kind.job: kind.name for kind in pipeline_kinds()}


class _Families:
    """The families of one scrape, built from rows; a family is exposed even with no sample."""

    def __init__(self) -> None:
        self.families: dict[str, Metric] = {}

    def family(self, name: str, help_text: str, typ: str) -> Metric:
        if name not in self.families:
            self.families[name] = Metric(name, help_text, typ)
        return self.families[name]

    def gauge(self, name: str, labels: Mapping[str, str], value: float) -> None:
        self.family(name, GAUGES[name], "gauge").add_sample(name, dict(labels), value)


class _Scrape(Collector):
    def __init__(self, metrics: Iterable[Metric]) -> None:
        self.metrics = list(metrics)

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics)


def _database(out: _Families, found: DatabaseGauges) -> None:
    for name in GAUGES:
        out.family(name, GAUGES[name], "gauge")
    for row in found.gauges:
        out.gauge(row["name"], row["labels"], row["value"])
    for name in UNKNOWN_AGES.values():
        out.family(name, _AGE_HELP, "histogram")
    for row in found.unknown_ages:
        name = UNKNOWN_AGES[row["series"]]
        labels = {"kind": row["series"]} if name.startswith("paygate_payout_") else {}
        family = out.families[name]
        family.add_sample(f"{name}_bucket", labels | {"le": row["le"]}, row["value"])
        if row["le"] == "+Inf":
            family.add_sample(f"{name}_count", labels, row["value"])
            family.add_sample(f"{name}_sum", labels, row["age_sum"])
    pipeline_outbox = {kind: {"pending": 0.0, "lag": 0.0, "dead": 0.0} for kind in JOB_KINDS.values()}
    for row in found.outbox:
        kind = instruments.code(row["kind"])
        if row["pending"]:
            out.gauge("paygate_outbox_lag_seconds", {"kind": kind}, row["lag"])
        if row["dead"]:
            out.gauge("paygate_outbox_dead_letters", {"kind": kind}, row["dead"])
        if row["kind"] in JOB_KINDS:
            totals = pipeline_outbox[JOB_KINDS[row["kind"]]]
            for field in ("pending", "lag", "dead"):
                totals[field] += row[field]
    for kind, totals in pipeline_outbox.items():
        out.gauge("paygate_payout_outbox_pending", {"kind": kind}, totals["pending"])
        out.gauge("paygate_payout_outbox_lag_seconds", {"kind": kind}, totals["lag"])
        out.gauge("paygate_payout_outbox_dead_letters", {"kind": kind}, totals["dead"])
    _escalations(out, found.escalations)


def _escalations(out: _Families, rows: list[dict[str, Any]]) -> None:
    """Per reason over every episode; per kind and reason over the pipeline's (summed, since a
    reason code that fails the pattern is shown as ``other``)."""
    general: dict[str, tuple[float, float]] = {}
    pipeline: dict[tuple[str, str], tuple[float, float]] = {}
    for row in rows:
        reason = instruments.code(row["reason"])
        open_, oldest = general.get(reason, (0.0, 0.0))
        general[reason] = (open_ + row["open"], max(oldest, row["oldest"]))
        if row["kind"] is not None:
            open_, oldest = pipeline.get((row["kind"], reason), (0.0, 0.0))
            pipeline[(row["kind"], reason)] = (open_ + row["open"], max(oldest, row["oldest"]))
    for reason, (open_, oldest) in general.items():
        out.gauge("paygate_escalations_open", {"reason": reason}, open_)
        out.gauge("paygate_escalations_oldest_open_seconds", {"reason": reason}, oldest)
    for (kind, reason), (open_, oldest) in pipeline.items():
        out.gauge("paygate_payout_escalations_open", {"kind": kind, "reason": reason}, open_)
        out.gauge("paygate_payout_escalations_oldest_open_seconds", {"kind": kind, "reason": reason}, oldest)


def _counted(out: _Families, rows: list[dict[str, Any]]) -> None:
    """The fleet's counters and histograms; a counter whose labels are all enumerated shows every
    label set, zero included, so rates and alerts never meet a missing series."""
    samples: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for family in instruments.FAMILIES.values():
        out.family(family.name, family.help, family.type)
        found = samples.setdefault(family.name, {})
        if family.type == "counter" and family.labels and all(v != "code" for v in family.labels.values()):
            for values in itertools.product(*family.labels.values()):
                found[(f"{family.name}_total", tuple(zip(family.labels, values, strict=True)))] = 0.0
    for row in rows:
        name = row["name"]
        family_name = name.removesuffix("_total") if name.endswith("_total") else name.rsplit("_", 1)[0]
        if family_name in samples:  # else counted by another release of the fleet: not this one's to describe
            samples[family_name][(name, tuple(sorted(row["labels"].items())))] = row["value"]
    for family_name, found in samples.items():
        for (name, labels), value in sorted(found.items(), key=_exposition_order):
            out.families[family_name].add_sample(name, dict(labels), value)


def _exposition_order(item: tuple[tuple[str, tuple[tuple[str, str], ...]], float]) -> tuple[Any, ...]:
    """Series by name and labels, a histogram's buckets by their bound."""
    (name, labels), _ = item
    le = dict(labels).get("le")
    return name, tuple(pair for pair in labels if pair[0] != "le"), float(le) if le is not None else 0.0


async def metrics(request: Request) -> Response:
    services = services_of(request)
    await flush(services.db)
    now = services.clock.now()
    found = await database_gauges(services.db, now)
    out = _Families()
    _database(out, found)
    levels, payouts = await overview.gauges(services.db, services.settings, now)
    for account, level in levels.items():
        out.gauge("paygate_provider_lookup_tokens", {"account": account}, level["tokens"])
        out.gauge("paygate_provider_paused", {"account": account}, 0.0 if level["paused_until"] is None else 1.0)
    for row in payouts:
        out.gauge("paygate_payouts", {"state": row["state"]}, row["payouts"])
    settings = services.settings
    since = await last_finished(services.db, [account.id for account in settings.provider_accounts])
    for account, moment in since.items():
        out.gauge("paygate_reconciliation_last_finished_age_seconds", {"account": account},
                  max(0.0, (now - moment).total_seconds()))
    out.gauge("paygate_reconciliation_interval_seconds", {}, settings.reconciliation_interval_s)
    _counted(out, await fleet_counts(services.db))
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(_Scrape(out.families.values()))
    text = generate_latest(REGISTRY) + generate_latest(scrape)
    return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")
