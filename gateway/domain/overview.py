"""The operator's Overview, decided from rows ("operators of payment systems live in
dashboards: they look at rates and backlogs before they read rows"). Pure: the store reads, this
shapes. Nothing here is a payment rule; every number is a count, an age or a latency.

- :func:`minutes` gives the last hour as 60 one-minute slots, oldest first, a slot nothing
  happened in counted as zeros, so a chart's axis never has gaps.
- :func:`quantile` reads a latency quantile from cumulative histogram buckets the way
  Prometheus' ``histogram_quantile`` does (linear within the bucket that holds the rank), so the
  Overview and a Grafana panel over the same buckets agree.
- :func:`account_calls` gives each provider account's calls, error rate and p50/p99 from the
  fleet's cumulative ``paygate_provider_call_seconds`` (docs/decisions/0063).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

WINDOW_MINUTES = 60
OUTCOMES = ("succeeded", "failed", "not_applied", "unknown")
# A call that came back without a usable answer; ``ok`` and ``rejected`` (a 4xx the provider meant,
# a decline among them) are answers (gateway.instruments.CALL_OUTCOMES).
ERRORS = frozenset({"rate_limited", "server_error", "timeout", "transport", "error"})


def window(now: datetime) -> tuple[datetime, datetime]:
    """The first instant after the window's start and the end of the current minute: 60 whole
    minutes, the current one included."""
    end = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return end - timedelta(minutes=WINDOW_MINUTES), end


def minutes(rows: Iterable[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """One slot per minute of the window, oldest first: ``minute`` and how many attempts started
    and settled by outcome in it."""
    by_minute = {row["minute"]: row for row in rows}
    start, _ = window(now)
    slots = []
    for n in range(WINDOW_MINUTES):
        minute = start + timedelta(minutes=n)
        row = by_minute.get(minute, {})
        slots.append({"minute": minute, "started": row.get("started", 0),
                      **{outcome: row.get(outcome, 0) for outcome in OUTCOMES}})
    return slots


def quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """The ``q`` quantile of a histogram given as (upper bound, cumulative count) pairs, ``+Inf``
    included; None with no observation. A rank in the ``+Inf`` bucket is the highest finite bound
    (as Prometheus answers), and the first bucket interpolates from 0."""
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, cumulative in ordered:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower_bound
            if cumulative == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (cumulative - lower_count)
        lower_bound, lower_count = bound, cumulative
    return lower_bound


def account_calls(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per account: ``calls``, ``errors`` (the :data:`ERRORS` outcomes), ``error_rate`` (None
    without calls), ``p50_s`` and ``p99_s`` over every outcome, from the rows of
    ``paygate_provider_call_seconds_bucket`` and ``_count`` (of every kind and operation)."""
    counts: dict[str, dict[str, float]] = {}
    buckets: dict[str, dict[float, float]] = {}
    for row in rows:
        labels = row["labels"]
        account = labels["account"]
        if row["name"].endswith("_count"):  # one row per kind and operation too: summed
            per_outcome = counts.setdefault(account, {})
            per_outcome[labels["outcome"]] = per_outcome.get(labels["outcome"], 0.0) + row["value"]
        else:
            bound = float(labels["le"])
            per_account = buckets.setdefault(account, {})
            per_account[bound] = per_account.get(bound, 0.0) + row["value"]
    found = {}
    for account in sorted(counts.keys() | buckets.keys()):
        outcomes = counts.get(account, {})
        calls = sum(outcomes.values())
        errors = sum(value for outcome, value in outcomes.items() if outcome in ERRORS)
        histogram = list(buckets.get(account, {}).items())
        found[account] = {"calls": int(calls), "errors": int(errors),
                          "error_rate": errors / calls if calls else None,
                          "p50_s": quantile(0.5, histogram), "p99_s": quantile(0.99, histogram)}
    return found


def escalations_by_reason(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Open episodes per reason, most first, with the oldest one's age in seconds (the rows come
    per reason and pipeline kind; a reason is summed over its kinds)."""
    reasons: dict[str, dict[str, Any]] = {}
    for row in rows:
        found = reasons.setdefault(row["reason"], {"reason": row["reason"], "open": 0, "oldest_s": 0.0})
        found["open"] += int(row["open"])
        found["oldest_s"] = max(found["oldest_s"], float(row["oldest"]))
    return sorted(reasons.values(), key=lambda r: (-r["open"], r["reason"]))
