"""bench/compare.py's command line and arithmetic: the figures it takes from each benchmark's
--json, their means over rounds and the B/A ratios it prints (bench/README.md, "Comparing two
revisions"). The runs themselves are real benchmarks, tried by hand."""

from __future__ import annotations

import pytest

from bench.compare import figures, mean, parse_args, ratios, render

NOTIFICATIONS = {"runs": [
    {"senders": 16, "mix": "unique", "rate": 500.0, "p99_ms": 60.0, "ratio_pgbench": 0.25, "gateway_cpu_us": 1500.0,
     "bare_rate": 20000.0},
    {"senders": 16, "mix": "duplicates", "rate": 600.0, "p99_ms": 50.0, "ratio_pgbench": 0.3,
     "gateway_cpu_us": 1200.0},
    {"senders": 16, "mix": "redeliveries", "rate": 2000.0, "p99_ms": 9.0},
]}


def test_two_revisions_default_to_the_notification_bench_and_pass_on_what_follows_the_double_dash() -> None:
    args = parse_args(["main", "perf", "--", "--duration", "5", "--connections", "16"])
    assert (args.rev_a, args.rev_b, args.bench, args.rounds, args.json) == ("main", "perf", "notifications", 1, None)
    assert args.bench_args == ("--duration", "5", "--connections", "16")


def test_the_bench_is_one_of_the_two_and_rounds_are_positive() -> None:
    assert parse_args(["a", "b", "--bench", "checkout", "--rounds", "3"]).bench == "checkout"
    assert parse_args(["a", "b", "--same-bench"]).same_bench and not parse_args(["a", "b"]).same_bench
    assert parse_args(["a", "b", "--bench", "outbox"]).bench == "outbox"
    with pytest.raises(SystemExit):
        parse_args(["a", "b", "--bench", "ingest"])
    with pytest.raises(SystemExit):
        parse_args(["a", "b", "--rounds", "0"])
    with pytest.raises(SystemExit):
        parse_args(["a"])


def test_the_benchmarks_json_stays_compare_s_own() -> None:
    with pytest.raises(SystemExit):
        parse_args(["a", "b", "--", "--json", "x.json"])


def test_notification_figures_are_named_by_senders_and_mix_with_the_duplicate_ratio() -> None:
    got = figures("notifications", NOTIFICATIONS)
    assert got["16s unique rate"] == 500.0
    assert got["16s duplicates p99_ms"] == 50.0
    assert got["16s duplicates/unique"] == pytest.approx(1.2)
    assert got["16s redeliveries/unique"] == pytest.approx(4.0)
    assert "16s unique bare_rate" not in got


def test_a_run_that_sent_its_notifications_again_shows_in_the_comparison() -> None:
    """A unique run that wrapped measured duplicates too: its wraps are a compared figure, so a
    comparison built on one says so instead of averaging it in unseen."""
    wrapped = {"runs": [{**NOTIFICATIONS["runs"][0], "wrapped": 2.0}]}
    assert figures("notifications", wrapped)["16s unique wrapped"] == 2.0
    assert "16s unique wrapped" in render("A", "B", figures("notifications", wrapped),
                                          figures("notifications", wrapped))


def test_checkout_figures_keep_the_compared_keys_it_has() -> None:
    got = figures("checkout", {"rate": 120, "p50_ms": 80.0, "clients": 16, "ratio_pgbench": 0.12})
    assert got == {"rate": 120.0, "p50_ms": 80.0, "ratio_pgbench": 0.12}


def test_outbox_and_recovery_figures_are_named_by_workers() -> None:
    outbox = {"runs": [{"workers": 1, "rate": 2000.0, "ratio_pgbench": 0.2, "cpu_us_per_row": 200.0, "pools": 2},
                       {"workers": 4, "rate": 1500.0, "ratio_pgbench": 0.3, "cpu_us_per_row": 300.0}],
              "sink_rate": 20000.0}
    assert figures("outbox", outbox) == {"1w rate": 2000.0, "1w ratio_pgbench": 0.2, "1w cpu_us_per_row": 200.0,
                                         "4w rate": 1500.0, "4w ratio_pgbench": 0.3, "4w cpu_us_per_row": 300.0}
    recovery = {"runs": [{"workers": 1, "rate": 180.0, "ratio_allowed": 0.9, "achieved_after_burst": 180.0,
                          "ratio_lookup": 0.2, "worker_cpu_us": 3000.0, "deferred": 7}]}
    assert figures("recovery", recovery) == {"1w rate": 180.0, "1w ratio_allowed": 0.9,
                                             "1w achieved_after_burst": 180.0, "1w ratio_lookup": 0.2,
                                             "1w worker_cpu_us": 3000.0}
    unlimited = {"runs": [{"workers": 1, "rate": 300.0, "ratio_allowed": None}]}
    assert figures("recovery", unlimited) == {"1w rate": 300.0}


def test_rounds_are_averaged_and_the_ratio_is_b_over_a() -> None:
    a = mean([{"rate": 100.0, "p99_ms": 10.0}, {"rate": 300.0, "p99_ms": 30.0}])
    b = mean([{"rate": 600.0, "p99_ms": 10.0}])
    assert a == {"rate": 200.0, "p99_ms": 20.0}
    assert ratios(a, b) == {"rate": 3.0, "p99_ms": 0.5}
    assert ratios({"non_2xx": 0.0}, {"non_2xx": 4.0}) == {"non_2xx": None}


def test_the_table_prints_both_figures_and_their_ratio() -> None:
    table = render("A", "B", {"rate": 200.0, "only_a": 1.0, "zero": 0.0}, {"rate": 650.0, "zero": 2.0})
    lines = table.splitlines()
    assert lines[0].split() == ["figure", "A", "B", "B/A"]
    assert lines[1].split() == ["rate", "200.00", "650.00", "3.25"]
    assert lines[2].split() == ["zero", "0.00", "2.00", "-"]
    assert len(lines) == 3


def test_a_certified_run_shows_its_ceiling_and_its_ratio_to_the_record_less_one() -> None:
    """docs/decisions/0087: the ingest row is read against the certified ceiling of the same run;
    the record-less ceiling's ratio stays beside it."""
    certified = {"runs": [{**NOTIFICATIONS["runs"][0], "certified": True, "pgbench_tps": 2500.0,
                           "pgbench_tps_without_record": 3500.0, "ratio_pgbench_without_record": 0.14}]}
    got = figures("notifications", certified)
    assert got["16s unique pgbench_tps"] == 2500.0
    assert got["16s unique ratio_pgbench_without_record"] == 0.14
    assert "16s unique pgbench_tps_without_record" not in got
