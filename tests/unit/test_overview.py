"""The Overview's pure shaping (gateway.domain.overview): the last hour as 60 slots with
no gaps, and latency quantiles read from cumulative buckets as Prometheus' histogram_quantile reads
them, so the console and a Grafana panel over the same buckets agree."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.domain import overview

INF = float("inf")


def test_the_last_hour_is_sixty_minutes_oldest_first_and_empty_minutes_are_zeros() -> None:
    now = datetime(2026, 12, 2, 7, 30, 42, tzinfo=UTC)
    busy = datetime(2026, 12, 2, 7, 29, tzinfo=UTC)
    slots = overview.minutes([{"minute": busy, "started": 2, "succeeded": 1, "failed": 0, "not_applied": 0,
                               "unknown": 1}], now)
    assert len(slots) == 60
    assert slots[0]["minute"] == datetime(2026, 12, 2, 6, 31, tzinfo=UTC)
    assert slots[-1]["minute"] == datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
    assert slots[-2] == {"minute": busy, "started": 2, "succeeded": 1, "failed": 0, "not_applied": 0, "unknown": 1}
    assert slots[-1] == {"minute": slots[-1]["minute"], "started": 0, "succeeded": 0, "failed": 0,
                         "not_applied": 0, "unknown": 0}


@pytest.mark.parametrize(("q", "expected"), [(0.5, 0.0625), (0.99, 0.2425), (0.1, 0.0125)])
def test_a_quantile_interpolates_within_its_bucket_like_histogram_quantile(q: float, expected: float) -> None:
    # 10 calls: 4 under 50 ms, 4 between 50 and 100 ms, 2 between 100 and 250 ms.
    buckets = [(0.05, 4.0), (0.1, 8.0), (0.25, 10.0), (INF, 10.0)]
    assert overview.quantile(q, buckets) == pytest.approx(expected)


def test_a_quantile_in_the_inf_bucket_is_the_highest_finite_bound_and_none_without_calls() -> None:
    assert overview.quantile(0.99, [(0.05, 1.0), (0.1, 1.0), (INF, 4.0)]) == 0.1
    assert overview.quantile(0.5, [(0.05, 0.0), (INF, 0.0)]) is None
    assert overview.quantile(0.5, []) is None


def test_each_account_gets_its_calls_errors_and_quantiles() -> None:
    def row(sample: str, value: float, **labels: str) -> dict[str, object]:
        return {"name": f"paygate_provider_call_seconds_{sample}", "labels": labels, "value": value}

    found = overview.account_calls([
        row("count", 3, account="cardco:acct_store:test", outcome="ok"),
        row("count", 1, account="cardco:acct_store:test", outcome="timeout"),
        row("count", 1, account="cardco:acct_store:test", outcome="rejected"),  # a decline: an answer
        row("bucket", 3, account="cardco:acct_store:test", outcome="ok", le="0.1"),
        row("bucket", 3, account="cardco:acct_store:test", outcome="ok", le="+Inf"),
        row("bucket", 0, account="cardco:acct_store:test", outcome="timeout", le="0.1"),
        row("bucket", 1, account="cardco:acct_store:test", outcome="timeout", le="+Inf"),
    ])
    assert found == {"cardco:acct_store:test": {"calls": 5, "errors": 1, "error_rate": 0.2,
                                                "p50_s": pytest.approx(0.0666, abs=1e-3), "p99_s": 0.1}}


def test_an_account_sums_its_calls_of_every_kind_and_operation() -> None:
    """The one provider-call family is labelled by kind and operation too (docs/decisions/0065):
    an account's numbers are the sum over them."""
    def row(sample: str, value: float, kind: str, operation: str, **labels: str) -> dict[str, object]:
        return {"name": f"paygate_provider_call_seconds_{sample}", "value": value,
                "labels": {"account": "cardco:acct_store:test", "kind": kind, "operation": operation, **labels}}

    found = overview.account_calls([
        row("count", 2, "payment", "create", outcome="ok"), row("count", 1, "payout", "lookup", outcome="ok"),
        row("count", 1, "payment", "lookup", outcome="timeout"),
        row("bucket", 2, "payment", "create", outcome="ok", le="+Inf"),
        row("bucket", 1, "payout", "lookup", outcome="ok", le="+Inf"),
        row("bucket", 1, "payment", "lookup", outcome="timeout", le="+Inf"),
    ])["cardco:acct_store:test"]
    assert (found["calls"], found["errors"], found["error_rate"]) == (4, 1, 0.25)


def test_escalations_are_summed_per_reason_most_first() -> None:
    rows = [{"reason": "deadline", "kind": None, "open": 1.0, "oldest": 30.0},
            {"reason": "deadline", "kind": "payout", "open": 2.0, "oldest": 90.0},
            {"reason": "outbox-dead-lettered", "kind": None, "open": 1.0, "oldest": 10.0}]
    assert overview.escalations_by_reason(rows) == [
        {"reason": "deadline", "open": 3, "oldest_s": 90.0},
        {"reason": "outbox-dead-lettered", "open": 1, "oldest_s": 10.0}]
