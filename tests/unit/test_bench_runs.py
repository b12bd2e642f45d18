"""bench/runs.py's command line and arithmetic (docs/decisions/0087: a row is read at the median of
at least five runs, every run shown). The runs themselves are real benchmarks, tried by hand."""

from __future__ import annotations

import pytest

from bench.runs import parse_args, render, summary


def test_five_runs_of_the_notification_bench_by_default_with_what_follows_the_double_dash() -> None:
    args, passed = parse_args(["--", "--certified", "--connections", "16"])
    assert (args.bench, args.runs, args.json) == ("notifications", 5, None)
    assert passed == ["--certified", "--connections", "16"]
    assert parse_args(["--bench", "checkout", "--runs", "7"])[0].runs == 7


def test_runs_are_positive_and_the_benchmarks_json_stays_runs_own() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--runs", "0"])
    with pytest.raises(SystemExit):
        parse_args(["--", "--json", "x.json"])
    with pytest.raises(SystemExit):
        parse_args(["--bench", "ingest"])


def test_each_figure_is_read_at_its_median_with_its_lowest_and_highest() -> None:
    runs = [{"ratio": 0.53, "p99_ms": 19.0}, {"ratio": 0.69, "p99_ms": 16.0}, {"ratio": 0.63, "p99_ms": 26.0},
            {"ratio": 0.59}, {"ratio": 0.64, "p99_ms": 18.0}]
    got = summary(runs)
    assert got["ratio"] == {"median": 0.63, "min": 0.53, "max": 0.69}
    # A figure some runs lack is read over the runs that have it; the highest p99 shows a bound missed.
    assert got["p99_ms"] == {"median": 18.5, "min": 16.0, "max": 26.0}


def test_the_table_shows_every_run_and_the_three_summaries() -> None:
    runs = [{"rate": 100.0, "only_first": 1.0}, {"rate": 300.0}, {"rate": 200.0}]
    lines = render(runs, summary(runs)).splitlines()
    assert lines[0].split() == ["figure", "run", "1", "run", "2", "run", "3", "median", "min", "max"]
    assert lines[1].split() == ["rate", "100.00", "300.00", "200.00", "200.00", "100.00", "300.00"]
    assert lines[2].split() == ["only_first", "1.00", "-", "-", "1.00", "1.00", "1.00"]
